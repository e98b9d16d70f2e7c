"""Reading a file only when it is a regular file of bounded size: a FIFO, a device or a
socket named like a trace or a screenshot would block the reader or stream forever, and a
huge (or sparse) file would be read whole into memory before any check could refuse it."""
from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

#: Bytes read at a time by :func:`regular_lines`.
CHUNK = 1 << 20


class LineTooLong(ValueError):
    """A line of a file over the limit of bytes a line may hold."""

    def __init__(self, line: int, limit: int):
        super().__init__(f"line longer than {limit} bytes (the limit of one event)")
        self.line = line


class NotReadable(ValueError):
    """The path names no regular file, or one larger than the limit (`too_large`; the
    message says which)."""

    def __init__(self, message: str, too_large: bool = False):
        super().__init__(message)
        self.too_large = too_large


@contextmanager
def _opened(path: Path) -> Iterator[tuple[BinaryIO, os.stat_result]]:
    """The regular file at `path`, open for reading, and its status (see :func:`read_regular`)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotReadable(f"{path} is not a regular file ({_kind(info.st_mode)})")
        yield file, info


def read_regular(path: Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them.

    The file is opened without blocking (opening a FIFO for reading waits for a writer
    otherwise) and checked through its descriptor, so that what is checked is what is read.

    Raises
    ------
    FileNotFoundError : nothing at `path`.
    NotReadable : not a regular file, or over `limit` bytes (checked before reading).
    OSError : no permission, a name too long, ...
    """
    with _opened(path) as (file, info):
        if limit is not None and info.st_size > limit:
            raise NotReadable(f"{path} has {info.st_size} bytes, over the limit of {limit}",
                              too_large=True)
        # a file that grew since fstat is still read no further than the limit
        data = file.read() if limit is None else file.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise NotReadable(f"{path} has over {limit} bytes, over the limit of {limit}",
                          too_large=True)
    return data


def regular_lines(path: Path, max_line: int) -> Iterator[bytes]:
    """The lines of the regular file at `path` (ended by ``\n`` alone), read a chunk at a
    time: a line longer than `max_line` bytes is refused as soon as it is, never read
    whole (a one-line file of gigabytes costs a chunk, not its size in memory).

    Raises what :func:`read_regular` raises, and :class:`LineTooLong`.
    """
    with _opened(path) as (file, _):
        pending, number = b"", 0
        while chunk := file.read(CHUNK):
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                number += 1
                if len(line) > max_line:
                    raise LineTooLong(number, max_line)
                yield line
            if len(pending) > max_line:
                raise LineTooLong(number + 1, max_line)
        if pending:
            yield pending


def _kind(mode: int) -> str:
    """What a non-regular file is, for a message.

    >>> _kind(stat.S_IFIFO), _kind(stat.S_IFDIR)
    ('a FIFO', 'a directory')
    """
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"
