"""One run's signs of failure, watched step by step (see
:mod:`trustlayer.learn.failure_signs` for what the model learned of them).

A sign of failure is never outweighed by milestones reached: a run that shows one when it
ends fails, however far it got. The signs:

* its last state, where successful runs ended, still shows a line their work made go;
* its last answer of a check still shows what successful runs went on to overcome;
* it changed the files every successful run changed and never checked its work after;
* it took lines out of a file successful runs only ever added to;
* the agent itself reported failure (a report of success is no evidence of success).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from trustlayer.model import Model
from trustlayer.observe.context import file_facts
from trustlayer.observe.edits import changed_in_facts, taken_out
from trustlayer.observe.steps import Step
from trustlayer.observe.templates import shape_of

MAX_QUOTED = 60  # characters of a line quoted in a reason


def _quote(line: str) -> str:
    text = line.partition("|")[2].strip()
    return f"'{text[:MAX_QUOTED]}...'" if len(text) > MAX_QUOTED else f"'{text}'"


@dataclass
class FailureWatch:
    """What one run showed of the signs of failure so far (River-style ``observe``)."""

    still_shown: list[str] = field(default_factory=list)  # gone lines its latest state shows
    unresolved: dict[str, list[str]] = field(default_factory=dict)  # check -> overcome
    # shapes its last answer shows
    changed: list[str] = field(default_factory=list)  # check files it changed
    checked_since: bool = False  # whether a check answered after its last such change
    taken_out: list[str] = field(default_factory=list)  # [path, line] of a file successful
    # runs only added to
    self_report: str | None = None

    def observe(self, model: Model, step: Step, before: frozenset[str] | None,
                text: str | None, ids: list[str]) -> None:
        """Take the run's next step (`before`: the lines of the state before it; `text`:
        the state's text, where a tool's diffs are read; `ids`: the model states it is)."""
        lines = step.fingerprint.content
        if model.added_only and not self.taken_out:
            self.taken_out = next(([path, removed[0]] for path, removed in taken_out(text).items()
                                   if path in model.added_only), [])
        if model.gone_lines:
            self.still_shown = sorted(lines.intersection(
                *(model.gone_lines.get(sid, ()) for sid in ids[:1])) if ids else ())
        calls = {action.call for action in step.actions}
        if model.check_files:
            changed = changed_in_facts(file_facts(before or frozenset()),
                                       step.fingerprint.lines) & set(model.check_files)
            if changed:
                self.changed = sorted(set(self.changed) | changed)
                self.checked_since = False
            elif calls & set(model.checks):
                self.checked_since = True
        for call in calls & model.overcome.keys():
            shapes = {shape_of(line) for line in lines}
            self.unresolved[call] = [shape for shape in model.overcome[call] if shape in shapes]

    def sign(self, model: Model) -> str | None:
        """The run's sign of failure, as a reason, or None when it shows none."""
        if self.taken_out:
            path, line = self.taken_out
            return (f"it took `{line[:MAX_QUOTED]}` out of {path}, where every successful run "
                    "only added lines")
        for call, shapes in sorted(self.unresolved.items()):
            if shapes:
                return (f"its last {call.partition(':')[2] or call} report still showed "
                        f"{_quote(shapes[0])}, which successful runs went on to fix")
        if self.changed and not self.checked_since and model.checks:
            return (f"it changed {self.changed[0]} and never checked its work afterwards; "
                    f"every successful run then used {' or '.join(model.checks)}")
        if self.still_shown:
            return (f"the run ended still showing {_quote(self.still_shown[0])}, which every "
                    "successful run's work made go")
        if self.self_report == "failure":
            return "the agent reported that it failed"
        return None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> "FailureWatch":
        return cls(**data) if data else cls()
