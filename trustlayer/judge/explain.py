"""A judged run as reports show it: each observed frame with the model state it matched,
the divergence point of a failed run, the milestone it missed and where, and the
equivalence decisions a person may doubt. No HTML: :mod:`trustlayer.show.html` draws it."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from trustlayer.compare.equivalence import Decision, judge
from trustlayer.compare.index import StateIndex
from trustlayer.compare.llm import LLMJudge, judge_for
from trustlayer.judge.matcher import judged
from trustlayer.judge.phases import frame_phases, where
from trustlayer.judge.status import FAILED, Status
from trustlayer.model import Model
from trustlayer.observe.steps import Step, run_steps
from trustlayer.observe.trace_events import Event, Run

MAX_DOUBTS = 6


@dataclass
class Frame:
    """One observed state of a run, as the report shows it."""

    seq: int
    event: Event
    step: Step | None
    ids: list[str]
    via: list[str]
    novel: list[str]
    phase: int
    milestone: str | None = None
    diverged: bool = False
    negative: str | None = None


@dataclass
class RunView:
    """What the report shows of one run."""

    run: Run
    status: Status
    frames: list[Frame]
    divergence: int | None = None
    missing: str | None = None
    location: str = ""
    doubts: list[tuple[Frame, str, Decision, str]] = field(default_factory=list)


def _divergence(frames: Sequence[Frame], status: Status) -> int | None:
    """Index of the frame a failed run's reason is about: the event of its ``step``, else
    (a step that is no state: an action, an end) the last frame before it."""
    if status.status != FAILED or not frames:
        return None
    step = status.step if status.step is not None else frames[-1].seq
    return max((i for i, f in enumerate(frames) if f.seq <= step), default=0)


def _doubt(decision: Decision, settings: Any) -> str | None:
    """Why a person may doubt this decision, or None when it is clear-cut."""
    evidence = decision.evidence
    if decision.verdict == "unsure":
        return "the tiers were unsure (without the LLM tier, unsure counts as different)"
    if decision.tier == "ssim" and decision.same:
        return "the perceptual hashes disagreed; SSIM on the thumbnails decided"
    if decision.tier == "phash" and decision.same and \
            evidence.get("phash_distance", 0) >= settings.phash_same:
        return "the perceptual hashes are at the edge of 'same'"
    if decision.tier == "structure" and decision.same and evidence.get("unexplained"):
        return "same, with lines no template explains (tolerated)"
    if decision.tier == "structure" and not decision.same and \
            len(evidence.get("missing", [])) == 1 and len(evidence.get("unexplained", [])) <= 2:
        return "different by a single expected line: a near miss"
    return None


def analyse_run(model: Model, run: Run, index: StateIndex | None = None,
                llm: LLMJudge | None = None) -> RunView:
    """Judge `run` as ``validate`` does (with the LLM tier when the model enables it) and
    gather what the report shows of it."""
    matcher = judged(model, run, llm)
    status = matcher.current
    steps = {step.seq: step for step in run_steps(run, model.settings)}
    events = {event.seq: event for event in run.events}
    in_phase = frame_phases(model, matcher.history)
    frames = []
    for entry, phase in zip(matcher.history, in_phase):
        milestone = next((sid for sid in entry.ids if sid in model.essential), None)
        frames.append(Frame(entry.seq, events[entry.seq], steps.get(entry.seq),
                            list(entry.ids), list(entry.via), list(entry.novel),
                            phase, milestone))
    view = RunView(run, status, frames)
    view.divergence = _divergence(frames, status)
    if view.divergence is not None:
        frame = frames[view.divergence]
        frame.diverged = True
        if frame.step is not None:
            frame.negative = next((sid for sid in model.negative
                                   if judge(model, frame.step.fingerprint, sid).same), None)
        by_name = {model.name(sid): sid for sid in model.states}
        view.missing = by_name.get(status.missing[0]) if status.missing else None
        view.location = where(model, view.missing) if view.missing else ""
    index = index or StateIndex(model)
    seen: set[tuple[str, str]] = set()
    for frame in frames:
        if frame.step is None:
            continue
        for sid in sorted(index.candidates(frame.step.fingerprint)):
            decision = judge(model, frame.step.fingerprint, sid)
            why = _doubt(decision, model.settings)
            key = (frame.step.fingerprint.image_sha or str(sorted(frame.step.fingerprint.lines)),
                   sid)
            if why and key not in seen:
                seen.add(key)
                view.doubts.append((frame, sid, decision, why))
    view.doubts.sort(key=lambda d: (d[2].verdict != "unsure", d[0].seq))
    del view.doubts[MAX_DOUBTS:]
    return view


def analyse_runs(model: Model, runs: Sequence[Run]) -> list[RunView]:
    """Each run judged (as ``validate`` does) and analysed for the report."""
    index = StateIndex(model)
    llm = judge_for(model.settings.llm)
    return [analyse_run(model, run, index, llm) for run in runs]
