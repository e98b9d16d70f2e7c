"""What a fleet's runs share: memos of what is read off a state, across runs.

A fleet's runs show the same texts and states (a tool's output, a page, its tree, a
project's files after the same edit): what one run's state made of them, the next run's
reuses, and a state's line sets are the very sets an earlier run showed (the memos keyed
by them then find them by identity). Only what is small is kept: texts up to
:data:`MAX_SHARED_CHARS`, line sets up to :data:`MAX_SHARED_LINES`, at most `size` calls
of each memo (16 MiB of texts for 1,024); a larger one rarely repeats.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, wraps
from typing import Any, ParamSpec, TypeVar, cast

#: Texts up to this long are remembered across runs.
MAX_SHARED_CHARS = 1 << 14
#: Sets of canonical lines up to this large are shared by the runs showing them.
MAX_SHARED_LINES = 1 << 12

P = ParamSpec("P")
T = TypeVar("T")


def shared_memo(size: int, small: Callable[..., bool],
                recent: int = 0) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """A decorator remembering what a function (pure, of hashable arguments, its answer
    never changed by its callers) gave: for at most `size` calls whose arguments `small`
    accepts, and for the last `recent` others (0: none; a long text read by several
    watchers of one state)."""
    def wrap(read: Callable[P, T]) -> Callable[P, T]:
        shared: Callable[..., T] = lru_cache(maxsize=size)(read)
        other: Callable[..., T] = lru_cache(maxsize=recent)(read) if recent else read

        def memo(*args: Any) -> T:  # (positional: asked at every state, kept lean)
            return (shared if small(*args) else other)(*args)
        return cast(Callable[P, T], wraps(read)(memo))
    return wrap


def short_text(text: str) -> bool:
    """Whether `text` is short enough to be remembered across runs."""
    return len(text) <= MAX_SHARED_CHARS


def short_texts(texts: tuple[str, ...]) -> bool:
    """Whether `texts` together are short enough to be remembered across runs."""
    return sum(map(len, texts)) <= MAX_SHARED_CHARS


def few_lines(lines: frozenset[str]) -> bool:
    """Whether the line set `lines` is small enough to be shared across runs."""
    return len(lines) <= MAX_SHARED_LINES


def few_in_all(parts: tuple[frozenset[str], ...]) -> bool:
    """Whether line sets `parts` together are small enough to be shared across runs."""
    return sum(map(len, parts)) <= MAX_SHARED_LINES


@shared_memo(1024, few_lines)
def in_order(lines: frozenset[str]) -> tuple[str, ...]:
    """`lines` sorted, as a snapshot writes them: a worker snapshots every run it judged at
    each checkpoint, and the runs of a fleet show the very same line sets."""
    return tuple(sorted(lines))
