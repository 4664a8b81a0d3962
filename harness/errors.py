"""The user-facing error type: anything raised as UsageError ends the CLI with one line and exit 2."""


class UsageError(Exception):
    """A mistake of the user's or of the set-up; the message says the cause and, if known, the fix."""
