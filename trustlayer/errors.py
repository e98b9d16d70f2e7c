"""Errors a user can act on, the exit codes the command line gives for them, and text cut
to a size a message can hold."""
from __future__ import annotations

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT, EXIT_UNDELIVERED = 0, 1, 2, 3
EXIT_CODES = """exit codes:
  0  every run passed (or the command did its job)
  1  some run failed (validate: as --fail-on counts)
  2  bad input or usage: a trace, model or labels file that does not read (the error names
     the file and line), a missing path, wrong arguments; validate judges the trace files
     that read and exits 2 only when none does (or, with --strict, at the first bad one)
  3  the verdicts could not all be delivered (validate --otel-verdicts)"""


class UsageError(Exception):
    """Bad input that is not a trace or model problem."""


#: What kind of problem a :class:`TraceError` is (its ``code``): the streaming worker's dead
#: letters are counted by it, never by the message's words.
MALFORMED_JSON, TOO_DEEP, WRONG_SCHEMA = "malformed_json", "too_deep", "wrong_schema"
IMAGE_TOO_LARGE, BAD_IMAGE, IMAGE_NOT_FOUND = "image_too_large", "bad_image", "image_not_found"
PATH_OUTSIDE_DIR = "path_outside_dir"
TRACE_CODES = (MALFORMED_JSON, TOO_DEEP, IMAGE_TOO_LARGE, BAD_IMAGE, PATH_OUTSIDE_DIR,
               IMAGE_NOT_FOUND, WRONG_SCHEMA)


class TraceError(ValueError):
    """A trace that does not follow the format; says where and what, and what kind of
    problem it is (`code`, one of :data:`TRACE_CODES`; a field wrong by default)."""

    def __init__(self, message: str, source: str = "<stream>", line: int | None = None,
                 code: str = WRONG_SCHEMA):
        self.message, self.source, self.line, self.code = message, source, line, code
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


#: The first bytes of files people give by mistake, and what they are.
MAGIC = ((b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
         (b"%PDF", "a PDF document"), (b"PK\x03\x04", "a zip archive"),
         (b"\x1f\x8b", "a gzip archive"))


def binary_kind(head: bytes) -> str:
    """What a binary file is, from its first bytes: ``" (a PNG image)"``, or ``""``.

    >>> binary_kind(b"\\x89PNG\\r\\n"), binary_kind(b"\\x00\\x01")
    (' (a PNG image)', '')
    """
    return next((f" ({kind})" for magic, kind in MAGIC if head.startswith(magic)), "")
