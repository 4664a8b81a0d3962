"""harness: the crashcheck CLI, Hypothesis strategies, the fuzz loop and reports."""
