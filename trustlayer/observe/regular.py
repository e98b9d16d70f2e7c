"""Reading a file only when it is a regular file of bounded size: a FIFO, a device or a
socket named like a trace or a screenshot would block the reader or stream forever, and a
huge (or sparse) file would be read whole into memory before any check could refuse it."""
from __future__ import annotations

import os
import stat
from pathlib import Path


class NotReadable(ValueError):
    """The path names no regular file, or one larger than the limit (`too_large`; the
    message says which)."""

    def __init__(self, message: str, too_large: bool = False):
        super().__init__(message)
        self.too_large = too_large


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
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotReadable(f"{path} is not a regular file ({_kind(info.st_mode)})")
        if limit is not None and info.st_size > limit:
            raise NotReadable(f"{path} has {info.st_size} bytes, over the limit of {limit}",
                              too_large=True)
        # a file that grew since fstat is still read no further than the limit
        data = file.read() if limit is None else file.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise NotReadable(f"{path} has over {limit} bytes, over the limit of {limit}",
                          too_large=True)
    return data


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
