"""The line a person reads in a state no successful run showed: what a reason quotes.

A state that matched nothing is told by one of its own lines, verbatim and shortened,
never by loose words: the line holding the most words no training state showed (an
error message: ``pytest: error: unrecognized arguments: --timeout=120``) that is no part
of a table (a row of data: ``Afghanistan``), else the line that differs from what
successful runs showed next, a heading first (``188 rows where cities > 2 sorted by
name``, ``hello word``), else a table's line with such words, else its first line.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

from trustlayer.compare.equivalence import judge
from trustlayer.compare.index import index_of, remembered
from trustlayer.model import Model
from trustlayer.observe.canonical import PLACE_PREFIXES, TABLE_ROLES
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.observe.templates import word_tokens
from trustlayer.observe.trace_events import Observation

#: A quoted line keeps at most this many words (then "…").
LINE_WORDS = 9
LINE_CHARS = 80
#: A state whose text and tree are longer than this has its quote chosen every time (its
#: fingerprint, kept by the memo, is large too).
MAX_REMEMBERED_CHARS = 1 << 16
_ROLE = re.compile(r"^-?\s*'?(?:[a-z]+)\s+\"(.*)\"(?:\s*\[.*\])?'?:?$")  # - heading "x" [level=1]
_WILDCARD = re.compile(r"<\*\*?>")
_TABLE_PART = re.compile(rf"^-?\s*'?(?:{'|'.join(sorted(TABLE_ROLES))})\b")


def plain(line: str) -> str:
    """A canonical line as a person read it: its source prefix, an accessibility role and
    template wildcards dropped, white space folded.

    >>> plain('A|- heading "5 rows where cities > 3" [level=3]'), plain("X|hello  <*>")
    ('5 rows where cities > 3', 'hello …')
    """
    body = line.partition("|")[2] if line[1:2] == "|" else line
    body = " ".join(_WILDCARD.sub("…", body).split())
    role = _ROLE.match(body)
    return " ".join(role.group(1).replace('\\"', '"').split()) if role else body.lstrip("- ")


def shortened(line: str, words: int = LINE_WORDS, chars: int = LINE_CHARS) -> str:
    """`line` cut to `words` words and `chars` characters (a run's line may be one word
    of megabytes: the row that keeps it is snapshotted).

    >>> shortened("a b c d", 2), shortened("x" * 9, chars=4), shortened("a  b")
    ('a b…', 'xxxx…', 'a b')
    """
    parts = line[:chars * 2].split()
    kept = " ".join(parts[:words])
    cut = len(parts) > words or len(kept) > chars or len(line) > chars * 2
    return kept[:chars] + "…" if cut else kept


def _raw_lines(observation: Observation) -> tuple[list[str], frozenset[str]]:
    """The state's lines as the runner gave them, and those of them that are lines of its
    accessibility tree (read through :func:`plain` once one is chosen: a tree has many)."""
    tree = [line.strip() for line in observation.a11y.splitlines()] \
        if isinstance(observation.a11y, str) else []
    lines = [*(observation.text or "").splitlines(), *tree, *(observation.files or ())]
    return [line.strip() for line in lines if line.strip()], frozenset(tree)


def _newest(lines: Iterable[str], novel: frozenset[str]) -> str | None:
    """The line holding the most of the `novel` words (the first such)."""
    best, most = None, 0
    for line in lines:
        # a line's words are substrings of it: one holding none of the novel words as a
        # substring is not split into words (most lines of a state never seen before)
        if not any(map(line.__contains__, novel)):
            continue
        found = len(word_tokens(f"X|{line}") & novel)
        if found > most:
            best, most = line, found
    return best


def _data(line: str, tree: frozenset[str]) -> bool:
    """Whether `line` is a part of a table: a row of the visible text (cells separated by
    tabs) or a row or cell of the tree. A table holds data (``Afghanistan``), which tells a
    person less of what went wrong than a line saying what the page shows."""
    return "\t" in line or line in tree and bool(_TABLE_PART.match(line))


def _mostly_numbers(line: str) -> bool:
    """Whether `line` is mostly digits (a cursor position, a table cell): it tells little."""
    return sum(ch.isdigit() for ch in line) > 0.25 * max(1, sum(ch.isalnum() for ch in line))


def _differing(model: Model, fingerprint: Fingerprint, expected: Iterable[str]) -> str | None:
    """A line of `fingerprint` the nearest of the `expected` states does not explain, of
    those where one says what the page shows (a table's rows and cells are its data): a
    heading before other lines, visible text before the accessibility tree, words before
    numbers."""
    decisions = [judge(model, fingerprint, sid).evidence
                 for sid in sorted(set(expected) & model.states.keys())]
    lines = [[line for line in ev.get("unexplained", ()) if not line.startswith(PLACE_PREFIXES)]
             for ev in decisions]
    said = [kept for kept in ([line for line in found if not _TABLE_PART.match(line[2:])]
                              for found in lines) if kept]
    nearest = min(said or [found for found in lines if found], key=len, default=[])
    rank = sorted(nearest, key=lambda line: ("heading" not in line, not line.startswith("X|"),
                                             _mostly_numbers(plain(line)), line))
    return plain(rank[0]) if rank else None


def telling_line(model: Model, fingerprint: Fingerprint, observation: Observation,
                 novel: Sequence[str], previous: Sequence[str], position: int) -> str:
    """The line that tells a state no successful run showed (see the module docstring),
    shortened to :data:`LINE_WORDS` words; `novel` holds its words no training state
    showed, `previous` the states the run showed before it, `position` the index of the
    next milestone. Empty for a state with no text (a screenshot alone)."""
    expected = tuple(dict.fromkeys([*model.essential[position:position + 1],
                                    *(later for sid in previous
                                      for later in model.successors(sid))]))
    text, a11y = observation.text or "", observation.a11y or ""
    if not isinstance(a11y, str) or len(text) + len(a11y) > MAX_REMEMBERED_CHARS:
        return _telling(model, fingerprint, observation, novel, expected)
    # a quote is chosen from the state's own lines, its fingerprint and where the run was:
    # remembered, as a fleet's runs show the same unknown screens (a notice, an error page);
    # the texts by their digest (a memo of texts would hold them all)
    source = hashlib.blake2b(f"{len(text)}:{text}{a11y}".encode(errors="surrogatepass"),
                             digest_size=16)
    source.update("\0".join(observation.files or ()).encode(errors="surrogatepass"))
    key = (fingerprint.identity, source.digest(), tuple(novel), expected)
    index = index_of(model)
    quote = index.quotes.get(key)
    if quote is None:
        quote = remembered(index.quotes, key, _telling(model, fingerprint, observation, novel,
                                                       expected), len(fingerprint.lines))
    return quote


def _telling(model: Model, fingerprint: Fingerprint, observation: Observation,
             novel: Sequence[str], expected: Iterable[str]) -> str:
    raw, tree = _raw_lines(observation)
    news = frozenset(novel)
    line = _newest((line for line in raw if not _data(line, tree)), news) if news else None
    if line is None:  # news in a table's data alone: the line that differs first
        line = _differing(model, fingerprint, expected) or \
            (_newest(raw, news) if news else None) or (raw[0] if raw else "")
    return shortened(plain(line) if line in tree else line)
