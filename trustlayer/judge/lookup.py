"""Which model states an observed state is: the candidates of the model's index, each
verified by the equivalence tiers. What was found for an observed state is remembered by
the model's index (a fleet's runs show the same screens), unless the LLM tier may be asked:
its calls are counted against each run's budget."""
from __future__ import annotations

from functools import lru_cache

from trustlayer.compare.equivalence import judge
from trustlayer.compare.index import StateIndex, index_of, remembered
from trustlayer.compare.llm import LLMJudge
from trustlayer.compare.report_shape import like_in_shape
from trustlayer.model import Model
from trustlayer.observe.fingerprints import Fingerprint

Typed = tuple[tuple[str, ...], ...]  # the texts the agent typed, as their tokens


@lru_cache(maxsize=256)  # asked at every state of a run, which types now and then
def own_words(typed: Typed) -> frozenset[str]:
    """The words of the texts the agent typed: its own choice, no news when shown."""
    return frozenset(t for text in typed for t in text if t.isalpha() and len(t) > 2)


def matching_states(model: Model, fingerprint: Fingerprint, typed: Typed, upcoming: str | None,
                    overlay: frozenset[str], llm: LLMJudge | None, budget: int
                    ) -> tuple[list[str], int]:
    """The states of `model` the observed state `fingerprint` is, and the LLM calls made
    for it (at most `budget`). `typed`: what the run's agent typed so far (a line showing
    it may still show a salient line; then the milestone to reach, `upcoming`, is a
    candidate too); `overlay`: lines of a notice left open, not held against a state."""
    index = index_of(model)
    if llm is not None and budget > 0:
        return _verified(model, index, fingerprint, typed, upcoming, overlay, llm, budget)
    key = (_looked_up_by(index, fingerprint, typed), typed, overlay, upcoming if typed else None)
    found = index.found.get(key)
    if found is None:
        verified, _ = _verified(model, index, fingerprint, typed, upcoming, overlay, None, 0)
        found = remembered(index.found, key, verified, len(fingerprint.lines))
    return list(found), 0


def _looked_up_by(index: StateIndex, fingerprint: Fingerprint, typed: Typed) -> tuple[object, ...]:
    """What of the observed state `fingerprint` the states found for it depend on: with
    text, no screenshot bytes a model state holds and nothing typed, its lines alone (no
    candidate is then looked up, nor a tier decided, by its screenshot: see
    :meth:`StateIndex.plausible` and :func:`~trustlayer.compare.equivalence.decide`); else
    its identity. A fleet's screens differ by a pixel (a clock, a cursor) where their text
    does not."""
    if fingerprint.has_structure and not typed and fingerprint.image_sha not in index.by_image:
        return fingerprint.lines, fingerprint.content, fingerprint.context
    return fingerprint.identity


def _verified(model: Model, index: StateIndex, fingerprint: Fingerprint, typed: Typed,
              upcoming: str | None, overlay: frozenset[str], llm: LLMJudge | None,
              budget: int) -> tuple[list[str], int]:
    found, calls = [], 0
    plausible = index.plausible(fingerprint)  # a line the agent's typed text changed is no
    if not plausible and typed:  # exact hit, nor of the milestone to reach when it names it
        plausible = index.candidates(fingerprint)
    if typed and upcoming is not None:
        plausible |= {upcoming}
    words = own_words(typed)
    for sid in sorted(plausible):
        decision = judge(model, fingerprint, sid, llm if calls < budget else None,
                         only_same=True, own_words=words, typed=typed, overlay=overlay)
        calls += bool(decision.evidence.get("llm_called"))
        if decision.same:
            found.append(sid)
    return found, calls


def reshaped(model: Model, fingerprint: Fingerprint, state_id: str) -> bool:
    """:func:`~trustlayer.compare.report_shape.like_in_shape`, remembered by the model's
    index like the states found (asked of every state until a tool's report is reached)."""
    index = index_of(model)
    key = (state_id, fingerprint.lines, fingerprint.context)
    found = index.reshaped.get(key)
    if found is None:
        found = remembered(index.reshaped, key, like_in_shape(model, fingerprint, state_id),
                           len(fingerprint.lines))
    return found
