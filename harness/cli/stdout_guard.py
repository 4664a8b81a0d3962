"""Standard output as the CLI writes it: a full, failing or closed stdout is one error line.

Owns the guard the CLI puts around sys.stdout for one command. Every subcommand prints its answer
there (`trace show`, `states`, `list`, fuzz's summary); when that cannot be written (`> /dev/full`,
a file on a full disk, `>&-`), the user must not get a Python traceback, nor exit 0 for output
that never arrived. A reader that went away (`| head`) is not an error: the pipe's end asked for
no more, as with any Unix tool (harness/cli/main.py returns 0 on BrokenPipeError).

Never used for files the commands write themselves (results, reports, records): those have their
own checks (harness/cli/outputs.py) and atomic writes.
"""
from __future__ import annotations

import errno
import os
import sys

from crashcheck.crashsim.errors import CrashcheckError


class OutputError(CrashcheckError):
    """Standard output could not be written; the message says why."""


def _failed(exc: OSError) -> BaseException:
    if exc.errno == errno.EPIPE:
        return BrokenPipeError(*exc.args)
    return OutputError(f"cannot write to standard output: {os.strerror(exc.errno) if exc.errno else exc}")


class GuardedStdout:
    """A text stream standing in for sys.stdout: writes and flushes that fail raise OutputError
    (one line for the CLI) instead of an OSError from deep inside a subcommand. Everything else
    (isatty, encoding, fileno, ...) is the real stream's."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is None:
            raise OutputError("cannot write to standard output: it is closed")
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise _failed(exc) from None

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except OSError as exc:
            raise _failed(exc) from None

    def isatty(self) -> bool:
        return self._stream is not None and self._stream.isatty()

    def __getattr__(self, name: str):
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


def install() -> GuardedStdout:
    """Put the guard around sys.stdout (idempotent) and return it."""
    if not isinstance(sys.stdout, GuardedStdout):
        sys.stdout = GuardedStdout(sys.stdout)
    return sys.stdout


def silence() -> None:
    """After stdout failed: drop what is still buffered, so that the interpreter's flush at exit
    does not print the same failure again as an 'Exception ignored' traceback."""
    stream = getattr(sys.stdout, "_stream", sys.stdout)
    if stream is None:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


__all__ = ["GuardedStdout", "OutputError", "install", "silence"]
