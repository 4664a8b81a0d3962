"""`python -m crashcheck ARGS` is `crashcheck ARGS`."""
import sys

from crashcheck.harness.cli.main import main

sys.exit(main())
