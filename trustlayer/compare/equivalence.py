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
from functools import lru_cache
from typing import Any

import numpy as np
from PIL import Image

from trustlayer.compare.index import index_of
from trustlayer.compare.llm import LLMJudge
from trustlayer.compare.typed_text import holding_typed, typed_variants
from trustlayer.compare.visual import hamming, masked_ssim
from trustlayer.model import Model, ModelState
from trustlayer.observe.canonical import PLACE_PREFIXES
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.observe.templates import WILDCARD, Profile, shape_of, split_line, word_tokens
from trustlayer.settings import Settings

UNSURE_MAX_UNEXPLAINED = 2
# successful runs whose last states differ in more than half their lines (left out one by
# one) share no shape of an end: then only the ends themselves accept
ENDING_MAX_TOLERANCE = 0.5


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


def _tolerated(unexplained: Collection[str], fp: Fingerprint, state: ModelState, settings: Settings,
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


def _structural(fp: Fingerprint, state: ModelState, settings: Settings,
                known_words: frozenset[str], strict: bool, only_same: bool,
                typed: Sequence[tuple[str, ...]] = (), extras: Profile | None = None,
                kept: frozenset[str] = frozenset(),
                overlay: frozenset[str] = frozenset()) -> Decision:
    """The structure tier; `only_same`: no unsure answer (none is asked further) and no
    evidence (the caller reads only whether the pair is the same). A salient line with a
    text the agent typed put in (`typed`) still counts as shown."""
    if not fp.has_structure:
        return Decision("different", "structure", {"reason": "the state has no text"})
    profile = state.profile
    missing: list[str]
    unexplained: Collection[str]
    evidence: dict[str, Any]
    if only_same and profile.shows_every_salient(fp.lines):  # no typed text needed
        missing, unexplained, evidence = [], profile.unexplained(fp.lines), {}
    elif only_same and not typed:
        return Decision("different", "structure")
    else:
        missing, extra = profile.compare(fp.lines)
        if typed and missing:
            missing, extra = typed_variants(missing, extra, holding_typed(fp.lines, tuple(typed)),
                                             typed, kept)
        evidence = {} if only_same else {"missing": missing[:8], "unexplained": extra[:8]}
        unexplained = extra
    if missing:
        return Decision("different", "structure", evidence)
    if not strict:  # shown as evidence, not held against the state
        unexplained = [line for line in unexplained if line not in fp.context]
    if extras is not None:
        unexplained = [line for line in unexplained if extras.template_of(line) is None]
    unexplained = [line for line in unexplained if line not in overlay]
    if _tolerated(unexplained, fp, state, settings, known_words):
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
           llm: LLMJudge | None = None, known_words: frozenset[str] = frozenset(),
           strict: bool = False, only_same: bool = False,
           typed: Sequence[tuple[str, ...]] = (), extras: Profile | None = None,
           kept: frozenset[str] = frozenset(),
           overlay: frozenset[str] = frozenset()) -> Decision:
    """Decide whether observed state `fp` is model state `state`: same, different or unsure.

    `llm` is consulted only for a pair the other tiers leave unsure; pass None (the
    default, and what callers do when the tier is off or the run's budget is spent)
    and unsure stays unsure, which callers treat as different. `known_words` are the
    words of the model's successful states: unexplained lines made only of them may use
    the state's learned tolerance (without them, only ``unexplained_line_tolerance``).
    Unless `strict` (a state where runs end: everything it shows is evidence), the
    observation's context lines (how the agent worked, :mod:`trustlayer.observe.context`) are
    not held against it. When the caller reads `only_same` (whether the pair is the
    same) and gives no `llm`, a pair the structure tier could only call unsure is called
    different without comparing its screens (their pixels then never decoded), and the
    structure tier keeps no evidence. Lines `extras` explains (what successful runs
    showed only sometimes, at a state that is no milestone) are never held against the
    state; a salient line with a text the agent typed (`typed`) put in stays shown, in
    place of words no successful run typed (`kept` are those they did). Lines of `overlay`
    are not held against the state either.
    """
    if fp.image_sha is not None and fp.image_sha in state.image_shas and not (
            state.structural and fp.has_structure
            and not state.profile.shows_every_salient(fp.lines)):
        # the same pixels are not the same state when the text says otherwise: another
        # object's page can look exactly alike (its address differs)
        return Decision("same", "exact", {"image_sha": fp.image_sha[:12]})
    if state.structural:
        decision = _structural(fp, state, settings, known_words, strict,
                               only_same=only_same and llm is None, typed=typed,
                               extras=extras, kept=kept, overlay=overlay)
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
    return decide(fp, model.states[state_id], model.settings, llm,
                  index.known_words | own_words,
                  strict=state_id in model.accepting, only_same=only_same, typed=typed,
                  extras=index.extras, kept=index.typed_words, overlay=overlay)


def like_in_shape(model: Model, fp: Fingerprint, state_id: str) -> bool:
    """Whether an observed state is model state `state_id`'s report asked for another way:
    the agent's request differs from every successful run's (a context line of the state,
    such as the command it typed, that the templates do not explain), and each salient
    line it lacks is there with other counts (:func:`trustlayer.observe.templates.shape_of`:
    ``45 passed`` for ``141 passed``, a shorter progress bar); the rest as :func:`decide`
    tolerates. For milestones that are a tool's report on the finished work (the whole
    suite's result, where a run tested the files it changed). The same request is met only
    with larger counts (:func:`grown`: tests added); a test deleted shows as one fewer.
    Whatever the counts, a report that still shows what successful runs fixed fails the
    run (:mod:`trustlayer.judge.signs`)."""
    state = model.states[state_id]
    if not state.structural or not fp.has_structure:
        return False
    profile = state.profile
    missing, unexplained = profile.compare(fp.lines)
    if not missing:
        return False
    same_request = fp.context.isdisjoint(unexplained)  # templates explain each
    in_shape = _in_shape(tuple(dict.fromkeys(shape_of(template) for template in missing)))
    reshaped = {line for line in unexplained if in_shape.template_of(shape_of(line)) is not None}
    if in_shape.compare({shape_of(line) for line in reshaped})[0]:
        return False
    if same_request and not all(any(grown(line, template) for template in missing)
                                for line in reshaped):
        return False
    rest = [line for line in unexplained if line not in reshaped and line not in fp.context]
    return _tolerated(rest, fp, state, model.settings, index_of(model).known_words)


def grown(line: str, template: str) -> bool:
    """Whether `line` is `template` with each count it holds at least as large: the same
    request reporting more of the same (``154 passed`` for ``151 passed``: the agent
    added tests), not fewer (a test deleted).

    >>> grown("X|154 passed in <dur>", "X|151 passed in <dur>")
    True
    >>> grown("X|150 passed in <dur>", "X|151 passed in <dur>")
    False
    """
    (prefix, body), (expected_prefix, expected) = split_line(line), split_line(template)
    if prefix != expected_prefix or len(body) != len(expected):
        return False
    return all(mine == theirs or theirs == WILDCARD
               or mine.isdigit() and theirs.isdigit() and int(mine) >= int(theirs)
               for mine, theirs in zip(body, expected))


@lru_cache(maxsize=1 << 10)  # a milestone's missing lines repeat from state to state
def _in_shape(shapes: tuple[str, ...]) -> Profile:
    return Profile(list(shapes), [True] * len(shapes))


def ends_like_success(model: Model, fp: Fingerprint, ids: list[str],
                      own_words: frozenset[str] = frozenset()) -> bool:
    """Whether an observed state (matching model states `ids`) is evidence of the goal:
    one of the states where successful runs ended (showing what every run ending there
    showed of its finished work, ``model.end_evidence``), or like all their last states
    together (``model.ending``: every line they all show, nothing beyond the variety they
    showed among themselves, no learned value changed)."""
    if not model.accepting:
        return True
    ended = set(ids) & set(model.accepting)
    for state_id in ended:
        profile, required = model.states[state_id].profile, model.end_evidence.get(state_id)
        if not required or {profile.templates[i] for line in fp.lines
                            if (i := profile.template_of(line)) is not None} >= set(required):
            return True
    if ended:  # such a state, but not finished as every run ending there was
        return False
    ending = model.ending
    if ending is None or not ending.structural or not fp.has_structure \
            or ending.tolerance > ENDING_MAX_TOLERANCE:
        return False
    if not ending.profile.shows_every_salient(fp.lines):
        return False
    return _tolerated(ending.profile.unexplained(fp.lines), fp, ending, model.settings,
                      index_of(model).known_words | own_words)


def at_an_end_place(model: Model, fp: Fingerprint) -> bool:
    """Whether an observed state is where successful runs ended, as a place: its title and
    URL are explained by the templates of their last states (``model.ending``), with every
    place line they all showed, and it shows no word none of them ever showed.

    For a run that gave every answer successful runs gave (``model.required_outputs``):
    the answer is its evidence of the goal, and a page at their end's place but of another
    shape (another correct query, other columns) ends as they end."""
    ending = model.ending
    if ending is None or not ending.structural:
        return False
    salient = [t for t in ending.profile.salient_templates if t.startswith(PLACE_PREFIXES)]
    place = [line for line in fp.lines if line.startswith(PLACE_PREFIXES)]
    if not salient or not place:
        return False
    missing, unexplained = ending.profile.compare(place)
    return not unexplained and not set(missing) & set(salient) \
        and not index_of(model).novelty(fp)
