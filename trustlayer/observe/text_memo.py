"""Memos of what is read off a text, shared by the runs that show it.

A fleet's runs show the same texts (a tool's output, a page, its tree): what one run's
state made of a text, the next run's reuses. Texts up to :data:`MAX_SHARED_CHARS` are
remembered, at most `size` of them (16 MiB of texts for 1,024); a longer one rarely
repeats, and only the last few are kept (one state's text is read by several watchers).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, wraps
from typing import TypeVar

#: Texts up to this long are remembered across runs; longer ones only for a few states.
MAX_SHARED_CHARS = 1 << 14
#: Sets of canonical lines up to this large are shared by the runs showing them (and what
#: is read off them remembered); a larger one is a long text's, which rarely repeats.
MAX_SHARED_LINES = 1 << 12
RECENT = 8

T = TypeVar("T")


def text_memo(size: int) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """A decorator remembering what a function (of a text only: pure, its answer never
    changed by its callers) gave for short texts across runs, and for long ones
    only for the last few."""
    def wrap(read: Callable[[str], T]) -> Callable[[str], T]:
        shared, recent = lru_cache(maxsize=size)(read), lru_cache(maxsize=RECENT)(read)

        @wraps(read)
        def memo(text: str) -> T:
            return (shared if len(text) <= MAX_SHARED_CHARS else recent)(text)
        return memo
    return wrap
