"""The user-facing error types (the hierarchy's root and map: crashsim/errors.py).

Anything raised as a CrashcheckError (UsageError, SetupError, DriverFailure, TraceError,
RunnerError, ...) ends the CLI with one line and exit 2, and no bug record.
"""
from crashcheck.crashsim.errors import CrashcheckError


class UsageError(CrashcheckError):
    """A mistake of the user's or of the set-up; the message says the cause and, if known, the fix."""


class SetupError(UsageError):
    """The machine, not the structure under test, is at fault: a pool address that cannot be
    mapped, a work folder that is full, read-only or missing, a driver rebuilt during the run.
    Never reported as a bug of the structure."""


class DriverFailure(CrashcheckError):
    """The traced driver could not run a history (its subclass RunFailure, in harness/check/traced_run.py,
    carries the finding when the code under test misbehaved)."""


__all__ = ["CrashcheckError", "DriverFailure", "SetupError", "UsageError"]
