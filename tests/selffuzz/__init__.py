"""The self-fuzz of crashcheck: hostile but legal targets generated from a seed (params.py, gen.py,
templates/), every subcommand run on each (drive.py), and the oracle judging each run (oracle.py).
README.md says how to run it and how to read a failure."""
