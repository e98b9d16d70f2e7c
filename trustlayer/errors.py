"""Errors a user can act on, the exit codes the command line gives for them, and text cut
to a size a message can hold."""
from __future__ import annotations

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2
EXIT_CODES = """exit codes:
  0  every run passed (or the command did its job)
  1  some run failed (validate: as --fail-on counts)
  2  bad input or usage: a trace, model or labels file that does not read (the error names
     the file and line), a missing path, wrong arguments"""


class UsageError(Exception):
    """Bad input that is not a trace or model problem."""


class TraceError(ValueError):
    """A trace that does not follow the format; says where and what."""

    def __init__(self, message: str, source: str = "<stream>", line: int | None = None):
        self.message, self.source, self.line = message, source, line
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")


class UnjudgeableEvent(Exception):
    """A well-formed event the judge cannot use (its screenshot does not decode): a fault
    of the run's stream, blamed on neither the agent nor the product."""


class ModelError(ValueError):
    """A model file that cannot be used."""


def cut(text: str, limit: int) -> str:
    """`text` cut to `limit` characters (a hostile key or message can be megabytes).

    >>> cut("abcdef", 3)
    'abc... (6 characters)'
    """
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
