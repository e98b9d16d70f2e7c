"""Find corresponding states across successful runs and group them into model states.

Every pair of runs is aligned by dynamic programming (order-preserving, gaps free,
like Needleman-Wunsch with a zero gap cost) on a similarity of their states; aligned
pairs are merged, most similar first, into groups. Two states of one run never share
a group unless they show the same thing (a run's own distinct observations are
distinct states), which keeps a "typed" and a "saved" screen apart however alike.
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from trustlayer.compare.visual import hamming
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.observe.templates import field_of
from trustlayer.settings import Settings

ALIGN_MIN_SIMILARITY = 0.5
StateKey = tuple[int, int]  # (run index, step index)


class Shape:
    """What the alignment compares of one state, computed once per state rather than once
    per pair of states: its content lines and the fields they fill, by kind of content."""

    __slots__ = ("fingerprint", "content", "structured", "kinds", "key")

    def __init__(self, fingerprint: Fingerprint, keys: dict[tuple, int]):
        self.fingerprint = fingerprint
        self.content = fingerprint.content
        #: a number for all that :func:`similarity` reads (numbered in `keys`, shared by the
        #: shapes compared): states of other runs that show the same thing (a start screen,
        #: a file left as it was) are compared once, and a pair is looked up cheaply
        self.key = keys.setdefault((self.content, fingerprint.image_sha, fingerprint.phash),
                                   len(keys))
        self.structured = fingerprint.has_structure
        by_kind: dict[str, set[str]] = {}
        for line in self.content:
            by_kind.setdefault(line[0], set()).add(line)
        self.kinds = {kind: (lines, {field_of(x) for x in lines})
                      for kind, lines in by_kind.items()}


_NO_LINES: tuple[set[str], set[str]] = (set(), set())


def _jaccard(a: set[str], b: set[str]) -> float:
    if not (a or b):
        return 1.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def similarity(left: Shape, right: Shape, settings: Settings) -> float:
    """A score in [0, 1]: the mean, over the kinds of content either state has (text,
    accessibility tree, files), of the Jaccard index of their lines, each averaged with
    the Jaccard index of the fields the lines fill (two confirmations of different
    bookings fill the same ``key:`` fields); so a long file listing does not drown a
    short tool output. Visual closeness for screens without text.
    """
    a, b = left.fingerprint, right.fingerprint
    if a.image_sha is not None and a.image_sha == b.image_sha:
        return 1.0
    if left.structured or right.structured:
        if not (left.structured and right.structured):
            return 0.0
        # summed in one order whichever state is left: the value is remembered for the pair
        # both ways round, and a set's order of strings changes from process to process
        kinds = sorted(left.kinds.keys() | right.kinds.keys())
        total = 0.0
        for kind in kinds:  # (a loop, not a sum of calls: learning compares every pair)
            lines_a, fields_a = left.kinds.get(kind, _NO_LINES)
            lines_b, fields_b = right.kinds.get(kind, _NO_LINES)
            total += (_jaccard(lines_a, lines_b) + _jaccard(fields_a, fields_b)) / 2
        return total / len(kinds)
    if a.phash is None or b.phash is None:
        return 0.0
    return max(0.0, 1.0 - hamming(a.phash, b.phash) / settings.phash_different)


def same_observation(left: Shape, right: Shape, settings: Settings) -> bool:
    """True when two states of one run show the same thing (a revisit)."""
    if left.structured or right.structured:
        return left.content == right.content
    a, b = left.fingerprint.phash, right.fingerprint.phash
    return a is not None and b is not None and hamming(a, b) <= settings.phash_same


def align_pair(left: Sequence[Fingerprint], right: Sequence[Fingerprint],
               settings: Settings) -> list[tuple[int, int, float]]:
    """Order-preserving alignment maximising the summed similarity of aligned pairs.

    >>> s = Settings()
    >>> a = [Fingerprint(frozenset({"X|a"})), Fingerprint(frozenset({"X|b"}))]
    >>> b = [Fingerprint(frozenset({"X|z"})), Fingerprint(frozenset({"X|b"}))]
    >>> align_pair(a, b, s)
    [(1, 1, 1.0)]
    """
    keys: dict[tuple, int] = {}
    return _align([Shape(fp, keys) for fp in left], [Shape(fp, keys) for fp in right],
                  settings, {})


def _similarities(left: Sequence[Shape], right: Sequence[Shape], settings: Settings,
                  known: dict[tuple[int, int], float]) -> list[list[float]]:
    """The similarity of every pair, each pair of distinct shape keys computed once
    (`known` keeps them between calls)."""
    rows = []
    for a in left:
        row = []
        for b in right:
            value = known.get((a.key, b.key))
            if value is None:  # (symmetric: kept both ways round)
                value = known[a.key, b.key] = known[b.key, a.key] = similarity(a, b, settings)
            row.append(value)
        rows.append(row)
    return rows


def _align(left: Sequence[Shape], right: Sequence[Shape], settings: Settings,
           known: dict[tuple[int, int], float]) -> list[tuple[int, int, float]]:
    n, m = len(left), len(right)
    sim = _similarities(left, right, settings, known)
    score = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            s = sim[i - 1][j - 1]
            diagonal = score[i - 1][j - 1] + s if s >= ALIGN_MIN_SIMILARITY else float("-inf")
            score[i][j] = max(score[i - 1][j], score[i][j - 1], diagonal)
    pairs = []
    i, j = n, m
    while i > 0 and j > 0:
        s = sim[i - 1][j - 1]
        if s >= ALIGN_MIN_SIMILARITY and score[i][j] == score[i - 1][j - 1] + s:
            pairs.append((i - 1, j - 1, s))
            i, j = i - 1, j - 1
        elif score[i][j] == score[i - 1][j]:
            i -= 1
        else:
            j -= 1
    return pairs[::-1]


class _Groups:
    """Union-find over states, refusing merges that would put two distinct states of
    one run in one group."""

    def __init__(self, runs: Sequence[Sequence[Shape]], settings: Settings):
        self.runs, self.settings = runs, settings
        self.parent: dict[StateKey, StateKey] = {}
        self.members: dict[StateKey, list[StateKey]] = {}
        for r, run in enumerate(runs):
            for i in range(len(run)):
                self.parent[(r, i)] = (r, i)
                self.members[(r, i)] = [(r, i)]

    def find(self, key: StateKey) -> StateKey:
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def union(self, a: StateKey, b: StateKey) -> None:
        root_a, root_b = self.find(a), self.find(b)
        if root_a == root_b:
            return
        for ra, ia in self.members[root_a]:
            for rb, ib in self.members[root_b]:
                if ra == rb and not same_observation(self.runs[ra][ia], self.runs[rb][ib],
                                                     self.settings):
                    return
        if root_a > root_b:
            root_a, root_b = root_b, root_a
        self.parent[root_b] = root_a
        self.members[root_a] += self.members.pop(root_b)

    def groups(self) -> list[list[StateKey]]:
        return [sorted(m) for m in self.members.values()]


def group_states(runs: Sequence[Sequence[Fingerprint]], settings: Settings) -> list[list[StateKey]]:
    """Group the states of successful runs into corresponding sets.

    `runs` must be in a canonical order (the learner sorts them by run id) so that the
    result does not depend on the order the runs were given in.
    """
    keys: dict[tuple, int] = {}
    shapes = [[Shape(fp, keys) for fp in run] for run in runs]
    groups = _Groups(shapes, settings)
    candidates: list[tuple[float, StateKey, StateKey]] = []
    for r, run in enumerate(shapes):
        for i, j in combinations(range(len(run)), 2):
            if same_observation(run[i], run[j], settings):
                candidates.append((2.0, (r, i), (r, j)))
    known: dict[tuple[int, int], float] = {}
    for (r, left), (q, right) in combinations(enumerate(shapes), 2):
        for i, j, s in _align(left, right, settings, known):
            candidates.append((s, (r, i), (q, j)))
    for _, a, b in sorted(candidates, key=lambda c: (-c[0], c[1], c[2])):
        groups.union(a, b)
    return groups.groups()
