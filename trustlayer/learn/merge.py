"""The corresponding states of successful runs (:mod:`trustlayer.learn.align`) merged into
model states: each group's templates (what must match, what may vary) and visual
exemplars, with what is never evidence left optional (habits, the frame, the layout).
"""
from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np

from trustlayer.compare.visual import learn_volatile_mask
from trustlayer.learn.align import group_states
from trustlayer.learn.evidence import before_the_work, habit_lines, touch_templates, untouched_facts
from trustlayer.learn.profiles import (
    borrow_variation,
    chrome_lines,
    chrome_variants,
    frame_lines,
    layout_lines,
    learn_profile,
    learned_tolerance,
    varied_words,
)
from trustlayer.model import ModelState
from trustlayer.observe.steps import Step, run_steps
from trustlayer.observe.trace_events import Run
from trustlayer.settings import Settings

MAX_EXEMPLARS = 3
Path = list[tuple[str, Step]]  # one run's steps, each with the model state it is


def build_state(state_id: str, members: Sequence[tuple[str, Step]], size: int,
                 optional: Sequence[frozenset[str]] | None = None) -> ModelState:
    fps = [step.fingerprint for _, step in members]
    structural = any(fp.has_structure for fp in fps)
    thumbs = [fp.thumbnail for fp in fps if fp.thumbnail is not None]
    arrays = [np.frombuffer(t, np.uint8).reshape(size, size) / 255.0 for t in thumbs]
    mask = learn_volatile_mask(arrays)
    lines = [fp.lines for fp in fps] if structural else []
    profile = learn_profile(lines, optional)
    if optional:
        profile = profile.with_optional(touch_templates(frozenset().union(*optional)))
    return ModelState(
        id=state_id, name="", profile=profile, structural=structural,
        image_shas=sorted({fp.image_sha for fp in fps if fp.image_sha}),
        phashes=sorted({fp.phash for fp in fps if fp.phash is not None}),
        thumbnails=thumbs[:MAX_EXEMPLARS],
        volatile_mask=None if mask is None else np.packbits(mask).tobytes(),
        members=[[run_id, step.seq] for run_id, step in members],
        tolerance=learned_tolerance(lines))


def _not_evidence(steps: Sequence[Step], index: int, last_lines: frozenset[str]) -> frozenset[str]:
    """Lines of a run's step `index` that no template is made salient by: its habit lines
    and the facts of files the run had left alone."""
    step = steps[index]
    return habit_lines(step, steps[index - 1] if index else None, last_lines) \
        | untouched_facts(step.fingerprint.lines)


Members = dict[str, list[frozenset[str]]]  # per model state, its members' lines


def merged_states(steps: dict[str, list[Step]], settings: Settings, background: Sequence[Run]
                  ) -> tuple[dict[str, ModelState], dict[str, Path], Members, frozenset[str]]:
    """The model states of the runs' `steps` (by run id), each run's path through them, each
    state's members' lines, and the frame (lines every state shows, and the layout of the
    `background` runs)."""
    run_ids = sorted(steps)
    groups = group_states([[st.fingerprint for st in steps[rid]] for rid in run_ids], settings)
    groups.sort(key=lambda g: (statistics.mean(i / len(steps[run_ids[r]]) for r, i in g), g[0]))
    last_lines = [steps[rid][-1].fingerprint.content for rid in run_ids]
    shown = [[step.fingerprint.content for step in steps[rid]] for rid in run_ids]
    early = [frozenset().union(*(step.fingerprint.content for step in
                                 before_the_work([("", step) for step in steps[rid]])
                                 or steps[rid][:1])) for rid in run_ids]
    chrome = chrome_lines(shown)
    frame = frame_lines(shown, early) | layout_lines(
        [[step.fingerprint.content for step in run_steps(run, settings)] for run in background])
    state_of: dict[tuple[int, int], str] = {}
    states: dict[str, ModelState] = {}
    for number, group in enumerate(groups):
        sid = f"s{number}"
        for key in group:
            state_of[key] = sid
        states[sid] = build_state(sid, [(run_ids[r], steps[run_ids[r]][i]) for r, i in group],
                                  settings.thumbnail_size,
                                  [_not_evidence(steps[run_ids[r]], i, last_lines[r]) | frame
                                   for r, i in group])
        if chrome:  # the frame may show another value anywhere (a theme, a mode)
            states[sid].profile = states[sid].profile.with_optional(chrome_variants(chrome))
    member_lines = {sid: [steps[run_ids[r]][i].fingerprint.lines for r, i in group]
                    for sid, group in zip(states, groups)}
    varied = set().union(*(varied_words(state.profile, member_lines[sid])
                           for sid, state in states.items()))
    for sid, group in zip(states, groups):
        if len({r for r, _ in group}) == 1:  # seen in one run: what varied elsewhere varies
            states[sid].profile = borrow_variation(states[sid].profile, varied)
    paths = {rid: [(state_of[(r, i)], st) for i, st in enumerate(steps[rid])]
             for r, rid in enumerate(run_ids)}
    return states, paths, member_lines, frame
