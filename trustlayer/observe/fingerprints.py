"""Fingerprints of one observed state, computed once per state.

A fingerprint holds the canonical lines of the state's text, accessibility tree, title,
URL and code snapshot (see :mod:`trustlayer.observe.canonical`) and, for a screenshot, the
SHA-256 of its bytes, a 64-bit perceptual hash and a small grayscale thumbnail for SSIM.
The hash and thumbnail of a screenshot are computed when first read: text decides most
states, and then the image is never decoded.
"""
from __future__ import annotations

import base64
import operator
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import imagehash
import numpy as np
from PIL import Image

from trustlayer.observe.canonical import (
    a11y_lines,
    content_lines,
    file_facts,
    text_lines,
    url_line,
)
from trustlayer.observe.context import content_context
from trustlayer.observe.context import file_facts as facts_of
from trustlayer.observe.images import ImageRef
from trustlayer.observe.shared import few_in_all, few_lines, shared_memo, short_text
from trustlayer.observe.trace_events import Action, Observation, as_given

HASH_IMAGE_SIZE = 32
#: The shorter side a screenshot is decoded to for its signature (``ImageRef.gray``).
SIGNATURE_SIDE = HASH_IMAGE_SIZE * 4


class _Signed:
    """A part of a screenshot's signature (``phash``, ``thumbnail``) on a fingerprint: the
    value it was given, else computed from its ``image`` the first time it is read."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, fp: Fingerprint | None, owner: type | None = None) -> object:
        if fp is None:
            return None  # the dataclass field's default
        value = fp.__dict__[self.name]
        if value is None and fp.image is not None:
            fp.__dict__["phash"], fp.__dict__["thumbnail"] = image_signature(fp.image,
                                                                             fp.thumbnail_size)
            value = fp.__dict__[self.name]
        return value

    def __set__(self, fp: Fingerprint, value: object) -> None:
        fp.__dict__[self.name] = value


@dataclass(frozen=True)
class Fingerprint:
    """Everything the equivalence tiers compare, for one state."""

    lines: frozenset[str]
    image_sha: str | None = None
    phash: int | None = _Signed()  # type: ignore[assignment]
    thumbnail: bytes | None = field(default=_Signed(), repr=False)  # type: ignore[assignment]
    title: str | None = None
    label: str | None = None
    context: frozenset[str] = frozenset()  # how the agent worked (trustlayer.observe.context)
    image: ImageRef | None = field(default=None, repr=False, compare=False)  # not decoded yet
    thumbnail_size: int = field(default=0, repr=False, compare=False)
    #: its lines that say what the state shows (:func:`content_lines`; computed when not
    #: given): the tiers read them for every state compared
    content: frozenset[str] = field(default=None, repr=False,  # type: ignore[arg-type]
                                    compare=False)  # (None only until __post_init__ sets it)
    #: its code-snapshot facts (``F|`` lines; computed when not given): the removals, the
    #: failure signs and the next state's context read them
    facts: frozenset[str] = field(default=None, repr=False,  # type: ignore[arg-type]
                                  compare=False)

    def __post_init__(self) -> None:
        if self.content is None:
            object.__setattr__(self, "content", content_lines(self.lines))
        if self.facts is None:
            object.__setattr__(self, "facts", facts_of(self.lines))

    @property
    def identity(self) -> tuple[object, ...]:
        """What the equivalence tiers read of this state, without decoding its screenshot:
        two fingerprints with one identity are judged alike against any model state."""
        return (self.lines, self.context, self.image_sha, self.__dict__["phash"],
                self.__dict__["thumbnail"])  # (a screenshot's bytes: its image_sha)

    @property
    def has_structure(self) -> bool:
        """True when the state carries text, an accessibility tree or files."""
        return bool(self.content)

    def thumbnail_array(self, size: int) -> np.ndarray | None:
        """The thumbnail as a `size` x `size` float array in [0, 1]."""
        if self.thumbnail is None:
            return None
        return np.frombuffer(self.thumbnail, dtype=np.uint8).reshape(size, size) / 255.0

    def to_json(self) -> dict:
        return {"lines": sorted(self.lines), "image_sha": self.image_sha,
                "phash": None if self.phash is None else f"{self.phash:016x}",
                "thumbnail": None if self.thumbnail is None else
                base64.b64encode(self.thumbnail).decode("ascii"),
                "title": self.title, "label": self.label}

    @classmethod
    def from_json(cls, data: dict) -> Fingerprint:
        return cls(frozenset(data["lines"]), data.get("image_sha"),
                   None if data.get("phash") is None else int(data["phash"], 16),
                   None if data.get("thumbnail") is None else base64.b64decode(data["thumbnail"]),
                   data.get("title"), data.get("label"))


def image_signature(shot: ImageRef, thumbnail_size: int) -> tuple[int, bytes]:
    """Perceptual hash (DCT pHash of a downscaled grayscale copy) and thumbnail bytes of a
    screenshot (what a runner-side publisher sends instead of it, too)."""
    side = SIGNATURE_SIDE
    small = shot.gray(min_side=side).resize((side, side), Image.Resampling.BOX)
    phash = int(str(imagehash.phash(small)), 16)
    thumb = small.resize((thumbnail_size, thumbnail_size), Image.Resampling.BOX)
    return phash, thumb.tobytes()


@shared_memo(1024, few_lines)
def _shared(lines: frozenset[str]) -> frozenset[str]:
    """The set of these lines that an earlier run showed, else `lines`: the very same set
    then, which the memos keyed by a state's lines find at once."""
    return lines


@shared_memo(1024, few_in_all)
def _joined(parts: tuple[frozenset[str], ...]) -> frozenset[str]:
    return frozenset().union(*parts)


class LineMemo:
    """The canonical lines of the last observation fingerprinted (one run's), kept to be
    reused when the next one shows the same text, tree, files or place: a third to three
    quarters of a run's states repeat one of them (a tree while the text changes, a
    project's files while a tool runs). A state showing all the same gets the very line
    set of the one before, which the equivalence tiers then recognise."""

    def __init__(self) -> None:
        self._parts: dict[str, tuple[object, frozenset[str]]] = {}
        self._joined: dict[str, tuple[tuple[frozenset[str], ...], frozenset[str]]] = {}

    def part(self, name: str, source: object,
             make: Callable[[], AbstractSet[str]]) -> frozenset[str]:
        """The lines `make` gives for `source` (the last ones if it equals the last)."""
        last = self._parts.get(name)
        if last is not None and last[0] == source:
            return last[1]
        lines = _shared(frozenset(make()))
        self._parts[name] = (source, lines)
        return lines

    def union(self, name: str, *parts: frozenset[str]) -> frozenset[str]:
        """The union of `parts` (the last one if they are the last ones)."""
        last = self._joined.get(name)
        if last is not None and all(map(operator.is_, last[0], parts)):
            return last[1]
        joined = _joined(parts)
        self._joined[name] = (parts, joined)
        return joined


def _shown_lines(text: str | None) -> frozenset[str]:
    return _shared_lines(text, None, True) if text else frozenset()


def _tree_lines(a11y: Any, inline_text: bool) -> frozenset[str]:
    if isinstance(a11y, str):
        return _shared_lines(None, a11y, inline_text)
    return frozenset(a11y_lines(a11y, inline_text=inline_text))  # a JSON tree: not kept


@shared_memo(1024, lambda text, a11y, _: short_text(text or a11y))
def _shared_lines(text: str | None, a11y: str | None, inline_text: bool) -> frozenset[str]:
    """The lines of a text, else of an accessibility tree, shared by the runs that show it."""
    if text is not None:
        return frozenset(text_lines(text, "X"))
    return frozenset(a11y_lines(a11y, inline_text=inline_text))


def fingerprint(observation: Observation, thumbnail_size: int,
                baseline_files: dict[str, str] | None = None,
                previous_facts: frozenset[str] | None = None,
                actions: Iterable[Action] = (), memo: LineMemo | None = None) -> Fingerprint:
    """Fingerprint one observation. `baseline_files` is the run's first code snapshot;
    the file facts of the state before (None for a run's first state) and the `actions`
    that led here tell the context lines (:func:`trustlayer.observe.context.context_lines`);
    `memo` holds the run's last lines."""
    memo = memo or LineMemo()
    title, url, text, a11y, files = (observation.title, observation.url, observation.text,
                                     observation.a11y, observation.files)
    place = memo.part("place", (title, url), lambda: text_lines(title, "T") | url_line(url))
    facts = memo.part("files", (files, baseline_files),
                      lambda: file_facts(files, baseline_files))
    shown = memo.part("text", text, lambda: _shown_lines(text))
    tree = memo.part("a11y", (a11y, not text), lambda: _tree_lines(a11y, not text))
    content = memo.union("content", shown, tree, facts)
    phash = thumbnail = image_sha = None
    shot, printed = observation.screenshot, observation.screenshot_print
    if shot is not None:  # hash and thumbnail when first read
        image_sha = shot.sha256
    elif printed is not None:  # fingerprinted by the runner: nothing to decode
        image_sha, phash, thumbnail = printed.sha256, printed.phash, printed.thumbnail
    context = content_context((shown, tree), facts, previous_facts, tuple(actions))
    return as_given(Fingerprint, lines=memo.union("lines", content, place), image_sha=image_sha,
                    phash=phash, thumbnail=thumbnail, title=title, label=observation.label,
                    context=context, image=shot, thumbnail_size=thumbnail_size,
                    content=content, facts=facts)
