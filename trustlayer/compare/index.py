"""Candidate lookup of model states for an observed state, sublinear in the model size.

Screens are found through multi-index hashing of the 64-bit perceptual hash (Hamming
radius ``phash_same``; ``phash_different`` for screens without text, which the SSIM
band decides); text-bearing states through an inverted index from their rarest exact
salient line. The
tiers of :mod:`trustlayer.compare.equivalence` then verify the few candidates.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TypeVar

from trustlayer.compare.visual import hamming
from trustlayer.model import Model, per_model
from trustlayer.observe.canonical import PLACE_PREFIXES
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.observe.profile_set import ProfileSet
from trustlayer.observe.steps import typed_words
from trustlayer.observe.templates import Profile, is_exact, template_form, word_tokens


class MultiIndexHash:
    """Multi-index hashing of 64-bit hashes for Hamming-radius queries (Norouzi, Punjani
    and Fleet, "Fast Search in Hamming Space with Multi-Index Hashing", CVPR 2012).

    The hash is cut into ``radius + 1`` chunks; two hashes within `radius` bits agree
    exactly on at least one chunk (pigeonhole), so a query reads one bucket per chunk
    instead of scanning every hash.

    >>> index = MultiIndexHash(radius=1)
    >>> index.add(0b1111, "a"); index.add(0xFF00, "b"); index.add(0b1110, "c")
    >>> sorted(index.within(0b1111))
    ['a', 'c']
    """

    def __init__(self, radius: int):
        self.radius = radius
        count = radius + 1
        bounds = [round(64 * i / count) for i in range(count + 1)]
        self.chunks = [(low, (1 << (high - low)) - 1) for low, high in zip(bounds, bounds[1:])]
        self.tables: list[dict[int, list[tuple[int, str]]]] = [{} for _ in self.chunks]

    def add(self, value: int, payload: str) -> None:
        for table, (shift, bits) in zip(self.tables, self.chunks):
            table.setdefault((value >> shift) & bits, []).append((value, payload))

    def within(self, value: int) -> set[str]:
        """Payloads of every hash within `radius` bits of `value`."""
        found = set()
        for table, (shift, bits) in zip(self.tables, self.chunks):
            for other, payload in table.get((value >> shift) & bits, ()):
                if hamming(value, other) <= self.radius:
                    found.add(payload)
        return found


#: Observed states whose matches one model's index remembers, and the most lines of one
#: state it keeps (memory: a worker holds many models; a long tool output rarely repeats).
MAX_FOUND, MAX_FOUND_LINES = 1024, 500
MAX_NEWS_LINES = 1 << 16  # lines whose novel words an index remembers


class StateIndex:
    """Finds the model states worth verifying for an observed state."""

    def __init__(self, model: Model):
        #: the states found for an observed state already judged (its identity, and what
        #: the run's agent typed and left over the screen): a fleet shows the same screens
        self.found: dict[tuple[object, ...], list[str]] = {}
        self._novel: tuple[frozenset[str] | None, tuple[str, ...]] = (None, ())
        self._line_news: dict[str, frozenset[str]] = {}
        #: the line quoted for an unknown state (:mod:`trustlayer.judge.quotes`), by what
        #: it was chosen from
        self.quotes: dict[tuple[object, ...], str] = {}
        self.reshaped: dict[tuple[object, ...], bool] = {}  # (judge.lookup.reshaped)
        self.ends: dict[tuple[object, ...], bool] = {}  # (compare.endings.ends_like_success)
        self.news: dict[tuple[object, ...], tuple[str, ...]] = {}  # (novelty)
        self.near = MultiIndexHash(model.settings.phash_same)
        self.wide = MultiIndexHash(model.settings.phash_different)
        self.by_line: dict[str, set[str]] = {}
        self.unanchored: set[str] = set()
        self.vocabulary: set[str] = set()  # words of every state's templates
        known: set[str] = set()  # ... of the successful runs' states only
        negative = set(model.negative)
        self.by_image: dict[str, set[str]] = {}
        anchors: dict[str, list[str]] = {}
        for sid, state in model.states.items():
            words = set().union(*map(word_tokens, state.profile.templates))
            self.vocabulary |= words
            if sid not in negative:
                known |= words
            for sha in state.image_shas:
                self.by_image.setdefault(sha, set()).add(sid)
            for phash in state.phashes:
                self.near.add(phash, sid)
                if not state.structural:
                    self.wide.add(phash, sid)
            if state.structural:
                anchors[sid] = [t for t in state.profile.salient_templates
                                if is_exact(t) and not t.startswith(PLACE_PREFIXES)]
        self.known_words = frozenset(known)
        self.extras = Profile(*_optional_lines(model))
        self.typed_words = typed_words(action for edge in model.edges
                                       for action in edge["actions"])
        self.required = {sid: frozenset(lines) for sid, lines in anchors.items() if lines}
        holders = Counter(t for lines in anchors.values() for t in lines)
        for sid, lines in anchors.items():
            if not lines:
                self.unanchored.add(sid)
                continue
            # a state matches only if the observation has every salient line, so its
            # rarest one is a necessary key
            rarest = min(lines, key=lambda t: (holders[t], t))
            self.by_line.setdefault(rarest, set()).add(sid)
        self._index_profiles(model)

    def _index_profiles(self, model: Model) -> None:
        """The profiles an observed state is compared with, explained together: the
        exact salient lines an observation has are bits of the set (a learned template is
        its form; a template written by hand, not learned, may not be)."""
        self.profiles = ProfileSet([state.profile for state in model.states.values()]
                                   + ([model.ending.profile] if model.ending else []))
        anchor_bits = {form: self.profiles.form_bits([form]) for form in self.by_line}
        required_bits = {sid: self.profiles.form_bits(lines)
                         for sid, lines in self.required.items()}
        anchor_masks = {form: bits for form, bits in anchor_bits.items() if bits is not None}
        required_masks = {sid: bits for sid, bits in required_bits.items() if bits is not None}
        self.bits: tuple[list[tuple[int, set[str]]], dict[str, int]] | None = None
        if len(anchor_masks) == len(anchor_bits) and len(required_masks) == len(required_bits):
            self.bits = ([(anchor_masks[form], sids) for form, sids in self.by_line.items()],
                         required_masks)

    def novelty(self, fp: Fingerprint) -> tuple[str, ...]:
        """Words of the observed state that no training state ever showed."""
        last = self._novel  # (one read: the index is shared by threads judging runs)
        if last[0] is not fp.lines:  # the matcher and the end check ask of the same state
            key = (fp.lines,)  # and a fleet's runs, of the same states
            news = self.news.get(key)
            if news is None:
                news = remembered(self.news, key, tuple(sorted(self._news(fp.lines))),
                                  len(fp.lines))
            last = self._novel = (fp.lines, news)
        return last[1]

    def _news(self, lines: Iterable[str]) -> set[str]:
        """The words of `lines` no training state showed, each line's remembered (a
        state's lines mostly repeat from the states before: a listing, a code snapshot)."""
        news, found = self._line_news, set[str]()
        for line in lines:
            words = news.get(line)
            if words is None:
                if len(news) >= MAX_NEWS_LINES:
                    news.clear()
                words = news[line] = word_tokens(line) - self.vocabulary
            if words:
                found |= words
        return found

    def candidates(self, fp: Fingerprint) -> set[str]:
        """Model states that could be the observed state (a superset of the matches, with
        near misses: what a report shows)."""
        return self._candidates(fp, self._anchored(frozenset(map(template_form, fp.lines))))

    def _anchored(self, forms: frozenset[str]) -> set[str]:
        return set().union(*(self.by_line[form] for form in forms & self.by_line.keys()))

    def _candidates(self, fp: Fingerprint, anchored: set[str], visual: bool = True) -> set[str]:
        found: set[str] = set(self.unanchored) if fp.has_structure else set()
        if visual and fp.phash is not None:
            found |= self.near.within(fp.phash)
            if not fp.has_structure:  # screens without text: the SSIM band needs more
                found |= self.wide.within(fp.phash)
        return found | anchored

    def plausible(self, fp: Fingerprint) -> set[str]:
        """The candidates that can still be *same*: the observation has every exact
        salient line of theirs, or a member's very image (a set test instead of the
        structure tier's line-by-line check, for the states that would fail it).

        An observation with text is looked up by its lines and image bytes alone, its
        screenshot not decoded: a state its pHash alone would add is a screen without
        text (*different* from it), or one that lacks a line it requires, or one its
        lines find anyway."""
        exact = self.by_image.get(fp.image_sha, set()) if fp.image_sha else set()
        visual = not fp.has_structure
        if self.bits is None:
            forms = frozenset(map(template_form, fp.lines))
            found = self._candidates(fp, self._anchored(forms), visual)
            return exact | {sid for sid in found if self.required.get(sid, frozenset()) <= forms}
        anchors, required = self.bits
        shown = self.profiles.shown(fp.lines)
        found = self._candidates(fp, set().union(*(sids for bit, sids in anchors
                                                   if shown & bit)), visual)
        return exact | {sid for sid in found if not required.get(sid, 0) & ~shown}


def _optional_lines(model: Model) -> tuple[list[str], list[bool]]:
    """The exact lines some successful runs showed at a state that is no milestone and
    others did not (a notice that came up or not as the application started)."""
    negative = set(model.negative) | set(model.essential) | set(model.accepting)
    lines = sorted({template for sid, state in model.states.items()
                    if sid not in negative and len({run for run, _ in state.members}) > 1
                    for template, salient in zip(state.profile.templates, state.profile.salient)
                    if not salient and is_exact(template)})
    return lines, [False] * len(lines)


Found = TypeVar("Found")


def remembered(store: dict[tuple[object, ...], Found], key: tuple[object, ...], found: Found,
               lines: int) -> Found:
    """`found`, what was found for an observed state of `lines` lines (its states, its
    quote), remembered in `store` under `key` (at most :data:`MAX_FOUND` keys: the oldest
    go first; a state of more than :data:`MAX_FOUND_LINES` lines is not kept)."""
    if lines > MAX_FOUND_LINES:
        return found
    if len(store) >= MAX_FOUND:
        del store[next(iter(store))]
    store[key] = found
    return found


@per_model
def index_of(model: Model) -> StateIndex:
    """The model's index, built once per model."""
    return StateIndex(model)
