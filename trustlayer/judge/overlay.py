"""Lines that came over a run's screen and stayed: a notice no successful run got, left
open while the agent worked on (a popup the product showed this time only).

A state no successful run showed gives the lines that came with it: right after a known
state, those its model state does not explain; after another unknown one, those new since
it (added to those of the overlay still shown, until the agent works beneath). While some
of them stay, later states are matched with them
not held against them, once the screen beneath reached a milestone still ahead with them
on it (the agent worked on beneath the notice); the state they came with is then matched
again without them. Before that, and for lines that came over the end (no work followed),
they stay news: an error shown over the last screen is no notice.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from trustlayer.model import Model
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.observe.shared import in_order
from trustlayer.observe.steps import Step

#: matches a fingerprint with some lines not held against it: the model states it is
Match = Callable[[Fingerprint, frozenset[str]], list[str]]


@dataclass
class Overlay:
    """One run's overlay: the lines that came over a known state, the lines and seq of the
    state they came with, and whether the agent worked on beneath them."""

    lines: frozenset[str] = frozenset()
    covered: frozenset[str] = frozenset()
    covered_seq: int | None = None
    worked_beneath: bool = False
    #: the lines of the step before, if none matched (kept here: a resumed matcher's step
    #: builder keeps only their file facts)
    previous: frozenset[str] = frozenset()

    def beneath(self, model: Model, step: Step, last: Sequence[str], ahead: Collection[str],
                match: Match) -> tuple[list[str], list[str]]:
        """The model states `step` (which matched none) is beneath the overlay, and those
        of the state the overlay came with when this step showed the work beneath it
        (else none); `last` are the states the step before matched, `ahead` the
        milestones still to reach."""
        lines = step.fingerprint.lines
        stayed = self.lines & lines
        found: list[str] = []
        came_with: list[str] = []
        if stayed:
            found = [sid for sid in match(step.fingerprint, stayed) if sid not in model.negative]
            if not self.worked_beneath and set(found) & set(ahead):
                self.worked_beneath = True
                came_with = [sid for sid in match(Fingerprint(self.covered), stayed)
                             if sid not in model.negative]
        if not self.worked_beneath:
            found = []
            if last and (state := model.states[last[0]]).structural:
                self.lines = state.profile.unexplained(lines)
                self.covered, self.covered_seq = lines, step.seq
            elif came := lines - self.previous:  # over a state no run showed
                self.lines = stayed | came
                if not stayed:
                    self.covered, self.covered_seq = lines, step.seq
        self.previous = frozenset() if found else lines
        return found, came_with

    def to_json(self) -> dict[str, Any]:
        return {"lines": in_order(self.lines), "covered": in_order(self.covered),
                "covered_seq": self.covered_seq, "worked_beneath": self.worked_beneath,
                "previous": in_order(self.previous)}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Overlay:
        if not data:
            return cls()
        return cls(frozenset(data["lines"]), frozenset(data["covered"]), data["covered_seq"],
                   data["worked_beneath"], frozenset(data["previous"]))
