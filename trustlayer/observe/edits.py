"""What every successful run removed from the code, read from the diffs its tools printed.

A coding agent's tools answer a write with a unified diff (``--- a/PATH``, ``+++ b/PATH``,
``-`` and ``+`` lines). Over a run, a line is *removed* from a file when a diff of that
file took it out and no later diff put it back, whole or inside a longer line (the old
call with ``.strip(...)`` appended still makes the old call). When every successful run that showed
all its changes of a file as diffs removed the same line (the old definition of a moved
function, the buggy expression), a run that kept it did not do what they all did, however
green its tests (a compatibility wrapper left behind, the old import kept).

Only what was seen is held against a run: a file the run changed without a diff of it
(``sed -i``, a whole file rewritten) is not judged.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from trustlayer.observe.canonical import mask
from trustlayer.observe.shared import few_in_all, shared_memo, short_text
from trustlayer.observe.trace_events import Run

_FILE_HEADER = "+++ b/"
_CONTENT = "F|content "  # see trustlayer.observe.canonical.file_facts
_HUNK_OR_OLD_HEADER = ("--- ", "@@")
_A_WORD = re.compile(r"[^\W\d_]{3}")
MIN_LINE_CHARS = 8  # shorter lines (")", "pass", '"""') occur everywhere in code


def diff_changes(text: str | None) -> Mapping[str, tuple[frozenset[str], frozenset[str]]]:
    """``path -> (removed, added)`` lines of the unified diffs in `text` (masked, white
    space folded).

    >>> diff_changes("--- a/m.py\\n+++ b/m.py\\n@@ -1 +1 @@\\n-x = old(1)\\n+x = new(1)\\n")
    mappingproxy({'m.py': (frozenset({'x = old(1)'}), frozenset({'x = new(1)'}))})
    """
    if not text or _FILE_HEADER not in text:  # most states show no diff: not split at all
        return _NO_CHANGES
    return _diffs(text)


# read by the removals, the words and the signs, in each run showing it
@shared_memo(1024, short_text, recent=8)
def _diffs(text: str) -> Mapping[str, tuple[frozenset[str], frozenset[str]]]:
    changes: dict[str, tuple[set[str], set[str]]] = {}
    current = None
    for line in text.split("\n"):
        if line.startswith(_FILE_HEADER):
            current = changes.setdefault(line[len(_FILE_HEADER):].strip(), (set(), set()))
        elif line.startswith(_HUNK_OR_OLD_HEADER) or current is None:
            continue
        elif line[:1] in "-+" and (body := mask(line[1:])):
            current[0 if line[0] == "-" else 1].add(body)
    return MappingProxyType({path: (frozenset(removed), frozenset(added))
                             for path, (removed, added) in changes.items()})


_NO_CHANGES: Mapping[str, tuple[frozenset[str], frozenset[str]]] = MappingProxyType({})


def changed_files(before: Mapping[str, str] | None, after: Mapping[str, str] | None) -> set[str]:
    """Paths whose content differs between two code snapshots (added and deleted ones too).

    >>> sorted(changed_files({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}))
    ['b', 'c']
    """
    if before is None or after is None:
        return set()
    return {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}


def changed_in_facts(before: Iterable[str] | None, after: Iterable[str]) -> set[str]:
    """:func:`changed_files` read from two states' canonical file facts (``F|content``;
    a state without a code snapshot changes nothing).

    >>> changed_in_facts({"F|content a.py 1f", "F|content b.py 2e"}, {"F|content a.py 1f"})
    {'b.py'}
    """
    return set(_changed(frozenset(before or ()), frozenset(after)))


# the removals and the signs ask it of the same two states, and a fleet's runs of the same
# snapshots (a state's facts are the very set for every run showing them)
@shared_memo(256, lambda before, after: few_in_all((before, after)), recent=4)
def _changed(before: frozenset[str], after: frozenset[str]) -> frozenset[str]:
    if before is after or not _snapshot(before) or not _snapshot(after):
        return frozenset()
    # a file changed, came or went where its content fact is in one state only
    return frozenset(line[len(_CONTENT):].rpartition(" ")[0] for line in before ^ after
                     if line.startswith(_CONTENT))


def _snapshot(lines: frozenset[str]) -> bool:
    """Whether `lines` hold a code snapshot with a file in it."""
    return any(line.startswith(_CONTENT) for line in lines)


@dataclass
class RemovalLedger:
    """One run's removals, fed state by state (River-style ``observe``).

    `watched`: when given, only these ``path -> lines`` are tracked (a model's required
    removals; what a matcher needs to keep), else every removed line is.
    """

    watched: Mapping[str, Sequence[str]] | None = None
    removed: dict[str, set[str]] = field(default_factory=dict)
    unseen: set[str] = field(default_factory=set)  # files changed without a diff of them
    # path -> a line put back -> the removed lines it holds (removed again when it goes)
    holders: dict[str, dict[str, set[str]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """What was removed so far, JSON-serialisable (:meth:`from_json` reads it back)."""
        return {"removed": {path: sorted(lines) for path, lines in self.removed.items()},
                "unseen": sorted(self.unseen),
                "holders": {path: {line: sorted(held) for line, held in holders.items()}
                            for path, holders in self.holders.items()}}

    @classmethod
    def from_json(cls, watched: Mapping[str, Sequence[str]] | None,
                  data: Mapping[str, Any]) -> RemovalLedger:
        """A ledger of `watched` from :meth:`to_json` (a part missing: nothing yet)."""
        return cls(watched,
                   {path: set(lines) for path, lines in data.get("removed", {}).items()},
                   set(data.get("unseen", ())),
                   {path: {line: set(held) for line, held in holders.items()}
                    for path, holders in data.get("holders", {}).items()})

    def observe(self, text: str | None, changed: set[str]) -> None:
        """Take a state's text and the files changed since the state before it."""
        changes = diff_changes(text)
        self.unseen |= changed - changes.keys()
        for path, (taken_out, put_back) in changes.items():
            if self.watched is not None and path not in self.watched:
                continue
            removed = self.removed.setdefault(path, set())
            holders = self.holders.setdefault(path, {})
            for line in taken_out:
                removed |= holders.pop(line, set())
            removed |= taken_out if self.watched is None else taken_out & set(self.watched[path])
            for line in put_back:
                if held := {old for old in removed if old in line}:
                    removed -= held
                    holders[line] = held

    def missing(self, required: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
        """The required ``(path, line)`` removals this run did not make, in files whose
        every change it showed."""
        return [(path, line) for path, lines in required.items() if path not in self.unseen
                for line in lines if line not in self.removed.get(path, set())]


Ledger = TypeVar("Ledger", "RemovalLedger", "WordLedger")


def _fed(run: Run, ledger: Ledger) -> Ledger:
    """`ledger` fed every state of `run` (its text, the files changed since the state
    before)."""
    files = None
    for event in run.events:
        if event.observation is not None:  # a state
            observed = event.observation.files
            ledger.observe(event.observation.text, changed_files(files, observed))
            files = files if observed is None else observed
    return ledger


def _distinctive(line: str) -> bool:
    return len(line) >= MIN_LINE_CHARS and bool(_A_WORD.search(line))


def required_removals(runs: Sequence[Run]) -> dict[str, list[str]]:
    """``path -> lines`` that every successful run showing all its changes of the file
    removed from it (at least two runs, and at least half of them, showed them all)."""
    ledgers = [_fed(run, RemovalLedger()) for run in runs]
    paths = set().union(*(ledger.removed.keys() for ledger in ledgers))
    required = {}
    for path in sorted(paths):
        seen = [ledger.removed.get(path, set()) for ledger in ledgers if path not in ledger.unseen]
        if len(seen) < max(2, (len(runs) + 1) // 2):
            continue
        lines = sorted(line for line in set.intersection(*seen) if _distinctive(line))
        if lines:
            required[path] = lines
    return required


def taken_out(text: str | None) -> Mapping[str, list[str]]:
    """``path -> lines`` that the diffs in `text` take out of files (only lines that say
    something: :data:`MIN_LINE_CHARS` or more, with a word). Shared by the runs showing
    `text`: not to be changed.

    >>> taken_out("--- a/t.py\\n+++ b/t.py\\n@@ -1 +1 @@\\n-assert ns == {}\\n+x = 1\\n")
    {'t.py': ['assert ns == {}']}
    """
    return _taken_out(text) if text and _FILE_HEADER in text else _NO_LINES


_NO_LINES: Mapping[str, list[str]] = MappingProxyType({})


@shared_memo(1024, short_text, recent=8)
def _taken_out(text: str) -> dict[str, list[str]]:
    return {path: sorted(line for line in removed if _distinctive(line))
            for path, (removed, _) in diff_changes(text).items()
            if any(_distinctive(line) for line in removed)}


def added_only(runs: Sequence[Run]) -> list[str]:
    """Files that successful runs' diffs changed and never took a line out of (tests
    beside the old ones, a changelog entry): a run taking lines out of one changes what
    they all kept (a pinned test edited or deleted)."""
    added: set[str] = set()
    cut: set[str] = set()
    for run in runs:
        for event in run.events:
            if event.observation is not None:  # a state
                changes = diff_changes(event.observation.text)
                added |= {path for path, (_, new) in changes.items() if new}
                cut |= set(taken_out(event.observation.text))
    return sorted(added - cut)


#: a name in code, three letters or more
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


def added_words(text: str | None) -> Mapping[str, Counter[str]]:
    """``path -> how many more times each name stands in the file`` after the diffs in
    `text` (names of three letters or more, on added lines less on removed ones: what
    code says, whatever its layout). Shared by the runs showing `text`: not to be changed.

    >>> added_words("+++ b/m.py\\n-x = old(line)\\n+for line in text.splitlines():\\n")["m.py"]
    Counter({'for': 1, 'text': 1, 'splitlines': 1, 'old': -1})
    """
    return _added_words(text) if text else _NO_WORDS


_NO_WORDS: Mapping[str, Counter[str]] = MappingProxyType({})


@shared_memo(1024, short_text, recent=8)
def _added_words(text: str) -> Mapping[str, Counter[str]]:
    counts: dict[str, Counter[str]] = {}
    for path, (old, new) in diff_changes(text).items():
        count = counts[path] = Counter(w for line in new for w in IDENTIFIER.findall(line))
        count.subtract(w for line in old for w in IDENTIFIER.findall(line))
        for word in [w for w, n in count.items() if n == 0]:
            del count[word]
    return counts


@dataclass
class WordLedger:
    """One run's names added to files by its diffs, fed state by state; a file changed
    without a diff of it is *unseen* (not judged)."""

    added: dict[str, Counter[str]] = field(default_factory=dict)
    unseen: set[str] = field(default_factory=set)

    def observe(self, text: str | None, changed: set[str]) -> None:
        """Take a state's text and the files changed since the state before it."""
        changes = added_words(text)
        self.unseen |= changed - changes.keys()
        for path, count in changes.items():
            self.added.setdefault(path, Counter()).update(count)

    def net(self, path: str) -> set[str] | None:
        """The names the run's diffs left standing more often in `path` than before (None:
        the run changed it without a diff, or not at all)."""
        if path in self.unseen or path not in self.added:
            return None
        return {word for word, count in self.added[path].items() if count > 0}

    def to_json(self) -> dict[str, Any]:
        return {"added": {p: dict(count) for p, count in self.added.items()},
                "unseen": sorted(self.unseen)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WordLedger:
        return cls({p: Counter(count) for p, count in data["added"].items()},
                   set(data["unseen"]))


def required_words(runs: Sequence[Run], paths: Iterable[str]) -> dict[str, list[str]]:
    """``path -> words`` that every successful run showing all its changes of the file
    (at least two runs, and at least half of them) added to it and did not take out: what
    every implementation says (the option's name, the call doing the work), whatever its
    shape. For `paths`, the files they all changed."""
    ledgers = [_fed(run, WordLedger()) for run in runs]
    required = {}
    for path in sorted(paths):
        seen = [words for ledger in ledgers if (words := ledger.net(path)) is not None]
        if len(seen) >= max(2, (len(runs) + 1) // 2) and (common := set.intersection(*seen)):
            required[path] = sorted(common)
    return required


def describe(missing: Iterable[tuple[str, str]]) -> str:
    """A reason naming what was kept: ``every successful run removed `x` from m.py``."""
    path, line = next(iter(missing))
    return f"every successful run removed `{line}` from {path}; this run's edits kept it"
