"""Candidate lookup of model states for an observed state, sublinear in the model size.

Screens are found through a BK-tree on the 64-bit perceptual hash (metric: Hamming
distance; Burkhard and Keller, "Some approaches to best-match file searching", 1973);
text-bearing states through an inverted index from their exact salient lines. The
tiers of :mod:`trustlayer.equivalence` then verify the few candidates.
"""
from __future__ import annotations

from typing import Iterator

from trustlayer.fingerprints import Fingerprint
from trustlayer.model import Model
from trustlayer.templates import WILDCARD, template_form, word_tokens
from trustlayer.visual import hamming


class BKTree:
    """A BK-tree of 64-bit hashes, each with a payload.

    >>> tree = BKTree()
    >>> tree.add(0b1111, "a"); tree.add(0b0000, "b"); tree.add(0b1110, "c")
    >>> sorted(tree.within(0b1111, 1))
    ['a', 'c']
    """

    def __init__(self) -> None:
        self.root: list | None = None  # [hash, payloads, {distance: child}]
        self.size = 0

    def add(self, value: int, payload: object) -> None:
        self.size += 1
        if self.root is None:
            self.root = [value, [payload], {}]
            return
        node = self.root
        while True:
            distance = hamming(value, node[0])
            if distance == 0:
                node[1].append(payload)
                return
            child = node[2].get(distance)
            if child is None:
                node[2][distance] = [value, [payload], {}]
                return
            node = child

    def within(self, value: int, radius: int) -> Iterator[object]:
        """Payloads of every hash within `radius` bits of `value`."""
        stack = [self.root] if self.root is not None else []
        while stack:
            node = stack.pop()
            distance = hamming(value, node[0])
            if distance <= radius:
                yield from node[1]
            for edge, child in node[2].items():
                if distance - radius <= edge <= distance + radius:
                    stack.append(child)


class StateIndex:
    """Finds the model states worth verifying for an observed state."""

    def __init__(self, model: Model):
        self.radius = model.settings.phash_different
        self.visual = BKTree()
        self.by_line: dict[str, set[str]] = {}
        self.unanchored: set[str] = set()
        self.vocabulary: set[str] = set()
        for sid, state in model.states.items():
            for template in state.profile.templates:
                self.vocabulary.update(word_tokens(template))
            for phash in state.phashes:
                self.visual.add(phash, sid)
            if not state.structural:
                continue
            anchors = [t for t in state.profile.salient_templates if WILDCARD not in t
                       and not t.startswith(("T|", "U|"))]
            if not anchors:
                self.unanchored.add(sid)
            for template in anchors:
                self.by_line.setdefault(template, set()).add(sid)

    def novelty(self, fp: Fingerprint) -> list[str]:
        """Words of the observed state that no training state ever showed."""
        return sorted({word for line in fp.lines for word in word_tokens(line)} - self.vocabulary)

    def candidates(self, fp: Fingerprint) -> set[str]:
        """Model states that could be the observed state (a superset of the matches)."""
        found = set(self.unanchored) if fp.has_structure else set()
        if fp.phash is not None:
            found.update(self.visual.within(fp.phash, self.radius))
        for line in fp.lines:
            found.update(self.by_line.get(template_form(line), ()))
        return found
