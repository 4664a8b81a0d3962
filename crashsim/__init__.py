"""crashsim: trace reading, persistency models, crash-state enumeration and the checker runner."""
