"""The root of crashcheck's exception hierarchy.

Owns one class: every error crashcheck raises on purpose derives from CrashcheckError, whose
message is one line for the user; the CLI (harness/cli/main.py) prints that line and exits 2. crashsim
is the lowest layer that raises such errors, so the root lives here and harness/core/errors.py builds
on it. Flow control (a stop, the budget running out) is not an error and is not in the hierarchy.

    CrashcheckError
      TraceError          crashsim/trace.py           a trace that cannot be read
      RunnerError         crashsim/runner_client.py   the checker runner broke or would not start
      ModelError          crashsim/persistency.py     persistency-model options that make no sense
      OutputError         harness/cli/stdout_guard.py standard output cannot be written (full, closed)
      UsageError          harness/core/errors.py      the user's mistake or the set-up's
        SetupError                                    the machine's fault, never a bug
      DriverFailure       harness/core/errors.py      the traced driver could not run a history
        RunFailure        harness/check/traced_run.py ...because the code under test misbehaved
"""


class CrashcheckError(Exception):
    """An error crashcheck raises on purpose; str() is one line for the user."""


__all__ = ["CrashcheckError"]
