"""Tiered, conservative equivalence of an observed state and a model state.

Tiers, cheapest first; each decision keeps the tier that decided and its evidence:

1. ``exact``: the screenshot bytes equal a member's, and the text (if any) shows every
   salient template.
2. ``structure``: for states with text, an accessibility tree or files, the learned
   templates decide. A salient template missing is *different* (it vetoes any visual
   likeness: a renamed file is a few pHash bits apart). Every line explained is *same*,
   whatever the pixels say (the same screen in a dark theme). A few unexplained lines
   on a screen that also looks the same are *unsure*.
3. ``phash`` then ``ssim`` (with the learned volatile-pixel mask) for screens without text.
4. ``llm``: only for pairs still unsure, when enabled and within the run's budget.
   Without it, unsure means different: states merge only on a confident *same*.
"""
from __future__ import annotations

import io
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from trustlayer.compare.index import index_of
from trustlayer.compare.llm import LLMJudge
from trustlayer.compare.typed_text import holding_typed, typed_variants
from trustlayer.compare.visual import hamming, masked_ssim
from trustlayer.model import Model, ModelState
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.observe.templates import Profile, word_tokens
from trustlayer.settings import Settings

UNSURE_MAX_UNEXPLAINED = 2


@dataclass(frozen=True)
class Allowances:
    """What an observed state may show beyond a model state's templates and still be it."""

    #: the words of the model's successful states: unexplained lines made only of them may
    #: use the state's learned tolerance (without them, only ``unexplained_line_tolerance``)
    known_words: frozenset[str] = frozenset()
    #: a state where runs end: everything it shows is evidence, its context lines (how the
    #: agent worked, :mod:`trustlayer.observe.context`) too
    strict: bool = False
    #: the telling tokens of the texts the agent typed: a salient line holding one in
    #: place of words successful runs typed stays shown
    typed: Sequence[tuple[str, ...]] = ()
    #: the words successful runs typed (see `typed`)
    kept: frozenset[str] = frozenset()
    #: what successful runs showed only sometimes, at a state that is no milestone
    extras: Profile | None = None
    #: the lines of the run's own notice (:mod:`trustlayer.judge.overlay`)
    overlay: frozenset[str] = frozenset()


NONE_ALLOWED = Allowances()


@dataclass(frozen=True)
class Decision:
    """The answer of the tiers for one pair: verdict, deciding tier, evidence."""

    verdict: str
    tier: str
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def same(self) -> bool:
        return self.verdict == "same"


def _visual(fp: Fingerprint, state: ModelState, settings: Settings) -> Decision:
    if fp.phash is None or not state.phashes:
        return Decision("different", "phash", {"reason": "no screenshot on one side"})
    distance = min(hamming(fp.phash, h) for h in state.phashes)
    if distance <= settings.phash_same:
        return Decision("same", "phash", {"phash_distance": distance})
    size = settings.thumbnail_size
    if distance >= settings.phash_different or fp.thumbnail is None or not state.thumbnails \
            or (mine := fp.thumbnail_array(size)) is None:
        return Decision("different", "phash", {"phash_distance": distance})
    mask = state.mask_array(size)
    ssim = max(masked_ssim(mine, np.frombuffer(t, np.uint8).reshape(size, size) / 255.0, mask)
               for t in state.thumbnails)
    evidence = {"phash_distance": distance, "ssim": round(ssim, 4)}
    if ssim >= settings.ssim_same:
        return Decision("same", "ssim", evidence)
    if ssim <= settings.ssim_different:
        return Decision("different", "ssim", evidence)
    return Decision("unsure", "ssim", evidence)


def tolerated(unexplained: Collection[str], fp: Fingerprint, state: ModelState, settings: Settings,
               known_words: frozenset[str]) -> bool:
    """Whether the unexplained lines are within what the state's successful members showed
    of each other (its learned tolerance, at least ``known_line_tolerance``), when none
    of them holds a word that no successful run ever showed (an error message is news,
    however small a part of the state) or changes a value successful runs showed (188
    rows for 8)."""
    if not unexplained:
        return True
    content = len(fp.content)
    if len(unexplained) > max(settings.unexplained_line_tolerance, state.tolerance,
                              settings.known_line_tolerance) * content:
        return False  # beyond every allowance below, whatever the lines say
    if not all(word_tokens(line) <= known_words for line in unexplained):
        return False
    if len(unexplained) <= settings.unexplained_line_tolerance * content:
        return True
    if state.profile.contradictions(fp.lines):
        return False
    if len(unexplained) <= state.tolerance * content:
        return True
    # beyond what the members showed, only lines that say something in known words
    # (not bare numbers or progress marks, where a count changed)
    return len(unexplained) <= settings.known_line_tolerance * content and all(
        word_tokens(line) for line in unexplained)


def _typed_may_show(profile: Profile, fp: Fingerprint, typed: Sequence[tuple[str, ...]]) -> bool:
    """Whether the state's lines holding a typed text, of those no template explains, are
    at least as many as the salient templates it lacks: each such line may show one
    (:func:`~trustlayer.compare.typed_text.typed_variants`); fewer leave one lacking."""
    if not typed:
        return False
    holding = holding_typed(fp.lines, tuple(typed))
    return len(holding.keys() & profile.unexplained(fp.lines)) >= profile.lacking(fp.lines)


def _structural(fp: Fingerprint, state: ModelState, settings: Settings,
                allowed: Allowances, only_same: bool) -> Decision:
    """The structure tier; `only_same`: no unsure answer (none is asked further) and no
    evidence (the caller reads only whether the pair is the same)."""
    if not fp.has_structure:
        return Decision("different", "structure", {"reason": "the state has no text"})
    profile = state.profile
    missing: list[str]
    unexplained: Collection[str]
    evidence: dict[str, Any]
    if only_same and profile.shows_every_salient(fp.lines):  # no typed text needed
        missing, unexplained, evidence = [], profile.unexplained(fp.lines), {}
    elif only_same and not _typed_may_show(profile, fp, allowed.typed):
        return Decision("different", "structure")
    else:
        missing, extra = profile.compare(fp.lines)
        typed = allowed.typed
        if typed and missing:
            missing, extra = typed_variants(missing, extra, holding_typed(fp.lines, tuple(typed)),
                                             typed, allowed.kept)
        evidence = {} if only_same else {"missing": missing[:8], "unexplained": extra[:8]}
        unexplained = extra
    if missing:
        return Decision("different", "structure", evidence)
    if not allowed.strict:  # shown as evidence, not held against the state
        unexplained = [line for line in unexplained if line not in fp.context]
    if allowed.extras is not None:
        extras = allowed.extras
        unexplained = [line for line in unexplained if extras.template_of(line) is None]
    unexplained = [line for line in unexplained if line not in allowed.overlay]
    if tolerated(unexplained, fp, state, settings, allowed.known_words):
        return Decision("same", "structure", evidence)
    if not only_same and len(unexplained) <= UNSURE_MAX_UNEXPLAINED \
            and _visual(fp, state, settings).same:
        return Decision("unsure", "structure", evidence)
    return Decision("different", "structure", evidence)


def _thumbnail_png(raw: bytes | None, size: int) -> bytes | None:
    if raw is None:
        return None
    out = io.BytesIO()
    Image.frombytes("L", (size, size), raw).save(out, format="PNG")
    return out.getvalue()


def decide(fp: Fingerprint, state: ModelState, settings: Settings,
           allowed: Allowances = NONE_ALLOWED, llm: LLMJudge | None = None,
           only_same: bool = False) -> Decision:
    """Decide whether observed state `fp` is model state `state`: same, different or unsure,
    `allowed` what it may show beyond the state's templates.

    `llm` is consulted only for a pair the other tiers leave unsure; pass None (the
    default, and what callers do when the tier is off or the run's budget is spent)
    and unsure stays unsure, which callers treat as different. When the caller reads
    `only_same` (whether the pair is the same) and gives no `llm`, a pair the structure
    tier could only call unsure is called different without comparing its screens (their
    pixels then never decoded), and the structure tier keeps no evidence.
    """
    if fp.image_sha is not None and fp.image_sha in state.image_shas and not (
            state.structural and fp.has_structure
            and not state.profile.shows_every_salient(fp.lines)):
        # the same pixels are not the same state when the text says otherwise: another
        # object's page can look exactly alike (its address differs)
        return Decision("same", "exact", {"image_sha": fp.image_sha[:12]})
    if state.structural:
        decision = _structural(fp, state, settings, allowed, only_same and llm is None)
    elif fp.has_structure:
        decision = Decision("different", "structure", {"reason": "model state has no text"})
    else:
        decision = _visual(fp, state, settings)
    if decision.verdict != "unsure" or llm is None:
        return decision
    size = settings.thumbnail_size
    answer = llm.judge("\n".join(sorted(fp.lines)), "\n".join(state.profile.templates),
                       _thumbnail_png(fp.thumbnail, size),
                       _thumbnail_png(state.thumbnails[0] if state.thumbnails else None, size))
    evidence = dict(decision.evidence, llm_reason=answer.reason, llm_called=answer.called)
    return Decision("same" if answer.same else "different", "llm", evidence)


def judge(model: Model, fp: Fingerprint, state_id: str, llm: LLMJudge | None = None,
          only_same: bool = False, own_words: frozenset[str] = frozenset(),
          typed: Sequence[tuple[str, ...]] = (),
          overlay: frozenset[str] = frozenset()) -> Decision:
    """:func:`decide` for `model`'s state `state_id`, with the model's own settings and
    known words (and `own_words`: what the run's agent typed, its own choice of words;
    `typed`: its texts' telling tokens), strict for a state where successful runs end;
    lines of `overlay` (the run's own notice, :meth:`Matcher._beneath`) are not held
    against it."""
    index = index_of(model)
    known = index.known_words | own_words if own_words else index.known_words  # (not copied)
    allowed = Allowances(known, state_id in model.accepting, typed, index.typed_words,
                         index.extras, overlay)
    return decide(fp, model.states[state_id], model.settings, allowed, llm, only_same)
