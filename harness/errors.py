"""The user-facing error types: anything raised as UsageError (or a subclass) ends the CLI with
one line and exit 2, and no bug record."""


class UsageError(Exception):
    """A mistake of the user's or of the set-up; the message says the cause and, if known, the fix."""


class SetupError(UsageError):
    """The machine, not the structure under test, is at fault: a pool address that cannot be
    mapped, a work folder that is full, read-only or missing, a driver rebuilt during the run.
    Never reported as a bug of the structure."""
