"""Find corresponding states across successful runs and group them into model states.

Every pair of runs is aligned by dynamic programming (order-preserving, gaps free,
like Needleman-Wunsch with a zero gap cost) on a similarity of their states; aligned
pairs are merged, most similar first, into groups. Two states of one run never share
a group unless they show the same thing (a run's own distinct observations are
distinct states), which keeps a "typed" and a "saved" screen apart however alike.
"""
from __future__ import annotations

from itertools import combinations
from typing import Sequence

from trustlayer.canonical import content_lines
from trustlayer.fingerprints import Fingerprint
from trustlayer.settings import Settings
from trustlayer.templates import field_of
from trustlayer.visual import hamming

ALIGN_MIN_SIMILARITY = 0.5
StateKey = tuple[int, int]  # (run index, step index)


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def similarity(left: Fingerprint, right: Fingerprint, settings: Settings) -> float:
    """A score in [0, 1]: the mean, over the kinds of content either state has (text,
    accessibility tree, files), of the Jaccard index of their lines, each averaged with
    the Jaccard index of the fields the lines fill (two confirmations of different
    bookings fill the same ``key:`` fields); so a long file listing does not drown a
    short tool output. Visual closeness for screens without text.
    """
    if left.image_sha is not None and left.image_sha == right.image_sha:
        return 1.0
    if left.has_structure or right.has_structure:
        if not (left.has_structure and right.has_structure):
            return 0.0
        a, b = _by_kind(content_lines(left.lines)), _by_kind(content_lines(right.lines))
        kinds = a.keys() | b.keys()
        return sum(_kind_similarity(a.get(k, set()), b.get(k, set())) for k in kinds) / len(kinds)
    if left.phash is None or right.phash is None:
        return 0.0
    return max(0.0, 1.0 - hamming(left.phash, right.phash) / settings.phash_different)


def _kind_similarity(a: set[str], b: set[str]) -> float:
    return (_jaccard(a, b) + _jaccard({field_of(x) for x in a}, {field_of(x) for x in b})) / 2


def _by_kind(lines: frozenset[str]) -> dict[str, set[str]]:
    kinds: dict[str, set[str]] = {}
    for line in lines:
        kinds.setdefault(line[0], set()).add(line)
    return kinds


def same_observation(left: Fingerprint, right: Fingerprint, settings: Settings) -> bool:
    """True when two states of one run show the same thing (a revisit)."""
    if left.has_structure or right.has_structure:
        return content_lines(left.lines) == content_lines(right.lines)
    return left.phash is not None and right.phash is not None \
        and hamming(left.phash, right.phash) <= settings.phash_same


def align_pair(left: Sequence[Fingerprint], right: Sequence[Fingerprint],
               settings: Settings) -> list[tuple[int, int, float]]:
    """Order-preserving alignment maximising the summed similarity of aligned pairs.

    >>> s = Settings()
    >>> a = [Fingerprint(frozenset({"X|a"})), Fingerprint(frozenset({"X|b"}))]
    >>> b = [Fingerprint(frozenset({"X|z"})), Fingerprint(frozenset({"X|b"}))]
    >>> align_pair(a, b, s)
    [(1, 1, 1.0)]
    """
    n, m = len(left), len(right)
    sim = [[similarity(a, b, settings) for b in right] for a in left]
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

    def __init__(self, runs: Sequence[Sequence[Fingerprint]], settings: Settings):
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
    groups = _Groups(runs, settings)
    candidates: list[tuple[float, StateKey, StateKey]] = []
    for r, run in enumerate(runs):
        for i, j in combinations(range(len(run)), 2):
            if same_observation(run[i], run[j], settings):
                candidates.append((2.0, (r, i), (r, j)))
    for (r, left), (q, right) in combinations(enumerate(runs), 2):
        for i, j, s in align_pair(left, right, settings):
            candidates.append((s, (r, i), (q, j)))
    for _, a, b in sorted(candidates, key=lambda c: (-c[0], c[1], c[2])):
        groups.union(a, b)
    return groups.groups()
