"""specs: reference models, crash acceptance rules, leak and invariant policies."""
