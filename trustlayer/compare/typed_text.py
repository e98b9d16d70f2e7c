"""Text the agent typed, shown again by the product: a salient line with one typed text put
in one place still counts as shown (the agent's own words, its choice; see
docs/how-it-decides.md point 10). The structure tier of
:mod:`trustlayer.compare.equivalence` asks it when a salient template is missing."""
from __future__ import annotations

from collections.abc import Collection, Sequence
from functools import lru_cache

from trustlayer.observe.templates import WILDCARD, split_line


def _telling(tokens: Sequence[str]) -> tuple[str, ...]:
    """The tokens that hold a letter or a digit (a wildcard too)."""
    return tuple(t for t in tokens if t == WILDCARD or any(c.isalnum() for c in t))


def typed_tokens(text: str) -> tuple[str, ...]:
    """The telling tokens of a text the agent typed, as lines are split."""
    return _telling(split_line(f"X|{text}")[1])


def with_typed_text(line: str, template: str, typed: Sequence[tuple[str, ...]],
                    kept: frozenset[str] = frozenset()) -> bool:
    """Whether `line` is `template` with one text the agent typed (`typed`: each text's
    telling tokens) put in one place, punctuation aside: added (a row whose empty ``-``
    became the description the agent typed), or in place of as many words or fewer that
    no successful run typed (`kept` are the words they did: a name the application gave,
    ``untitled.txt``, that the agent chose to call ``hello.txt``). Its own choice, not
    another row.

    >>> typed = [("Crime", "Mystery"), ("Detective", "and", "crime", "novels")]
    >>> with_typed_text("X|Crime & Mystery Detective and crime novels", "X|Crime & Mystery -",
    ...                 typed)
    True
    >>> with_typed_text("X|Mystery Crime & Mystery", "X|Crime & Mystery -", typed)
    False
    >>> with_typed_text("T|hello.txt - Lab", "T|untitled . txt - Lab", [("hello", "txt")])
    True
    >>> with_typed_text("T|hello.txt - Lab", "T|untitled . txt - Lab", [("hello", "txt")],
    ...                 kept=frozenset({"untitled"}))
    False
    """
    return _typed_in(_telling_line(line), _telling_line(template), typed, kept)


def _telling_line(line: str) -> tuple[str, tuple[str, ...]]:
    """A line's prefix and its telling tokens."""
    prefix, body = split_line(line)
    return prefix, _telling(body)


def _typed_in(line: tuple[str, tuple[str, ...]], template: tuple[str, tuple[str, ...]],
              typed: Sequence[tuple[str, ...]], kept: frozenset[str]) -> bool:
    """:func:`with_typed_text` on lines split by :func:`_telling_line`."""
    (prefix, mine), (wanted_prefix, wanted) = line, template
    if prefix != wanted_prefix or not wanted:
        return False
    for text in typed:
        for start in range(len(mine) - len(text) + 1):
            if mine[start:start + len(text)] != text:
                continue
            before, after = mine[:start], mine[start + len(text):]
            end = len(wanted) - len(after)
            if end < len(before) or not _fits(before, wanted[:len(before)]) \
                    or not _fits(after, wanted[end:]):
                continue
            replaced = wanted[len(before):end]
            if len(replaced) <= len(text) and kept.isdisjoint(replaced):
                return True
    return False


def _fits(tokens: Sequence[str], wanted: Sequence[str]) -> bool:
    return all(w in (WILDCARD, t) for w, t in zip(wanted, tokens))


@lru_cache(maxsize=64)
def holding_typed(lines: frozenset[str], typed: tuple[tuple[str, ...], ...]
             ) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The lines of a state that hold every token of a typed text (a substring test:
    most lines hold none), split by :func:`_telling_line`: once per state, not per
    candidate state it is compared with."""
    held: set[str] = set()
    for text in typed:  # its longest token first: the fewest lines hold it
        first, *rest = sorted(text, key=len, reverse=True) or [""]
        held.update(line for line in lines if first in line and all(t in line for t in rest))
    return {line: _telling_line(line) for line in lines if line in held} if held else {}


def typed_variants(missing: list[str], unexplained: Collection[str],
                    split: dict[str, tuple[str, tuple[str, ...]]],
                    typed: Sequence[tuple[str, ...]],
                    kept: frozenset[str]) -> tuple[list[str], list[str]]:
    """The salient templates still missing, and the lines still unexplained, once a line
    showing a missing template with a typed text put in (:func:`with_typed_text`) counts
    as showing it (`split`: the state's lines that may hold a typed text, split)."""
    rest, still = list(unexplained), []
    holding = [line for line in rest if line in split]
    for template in missing:
        wanted = _telling_line(template)
        found = next((line for line in holding
                      if _typed_in(split[line], wanted, typed, kept)), None)
        if found is None:
            still.append(template)
        else:
            rest.remove(found)
            holding.remove(found)
    return still, rest
