"""A matcher stopped and resumed: :func:`snapshot` is what it needs to go on, as JSON (the
streaming worker keeps it in each run's record, the history's older rows apart:
:func:`with_rows` puts them back), :func:`restore` the matcher again; :func:`given_up`, the
matcher of a run its stream failed, which keeps only its status."""
from __future__ import annotations

from typing import Any

from trustlayer.compare.llm import LLMJudge
from trustlayer.judge.effects import EffectWatch
from trustlayer.judge.history import row_index, row_of
from trustlayer.judge.matcher import Matcher
from trustlayer.judge.outputs import OutputLedger
from trustlayer.judge.overlay import Overlay
from trustlayer.judge.signs import FailureWatch
from trustlayer.judge.status import Status
from trustlayer.model import Model
from trustlayer.observe.context import file_facts
from trustlayer.observe.edits import RemovalLedger
from trustlayer.observe.steps import StepBuilder


def snapshot(matcher: Matcher, since: int = 0) -> dict[str, Any]:
    """What `matcher` needs to resume, JSON-serialisable (see :func:`restore`): the
    history's rows from row `since` on, as lists of
    :data:`~trustlayer.judge.history.HISTORY_FIELDS` (those before are kept by the caller,
    and given back to :func:`with_rows`), and of the previous state's lines only those the
    next step reads (its file facts; every line when the model requires outputs, whose
    values are looked up on that screen)."""
    previous = matcher.builder.previous_lines
    if previous is not None and not matcher.model.required_outputs:
        previous = file_facts(previous)
    status = matcher.status
    history = matcher.history
    # one older row can still change: the one the overlay's notice came with, matched
    # again once the agent works beneath it (Matcher._beneath); it is kept here too
    covered = matcher.overlay.covered_seq
    row = row_index(history, covered) if since and covered is not None else None
    amended = {"amended": [row, list(history[row])]} if row is not None and row < since else {}
    return {"position": matcher.position,
            "history": [list(entry) for entry in (history[since:] if since else history)],
            **amended,
            "matched_at": matcher.matched_at, "start_ts": matcher.start_ts,
            **matcher.outputs.to_json(), "effects": matcher.effects.to_json(),
            "reshaped": matcher.reshaped,
            "signs": matcher.signs.to_json(), "typed": [list(text) for text in matcher.typed],
            "overlay": matcher.overlay.to_json(),
            **matcher.removals.to_json(), **matcher.builder.to_json(previous),
            "status": None if status is None else  # asdict() deep-copies: slow
            {name: list(value) if isinstance(value, list) else value
             for name, value in vars(status).items()}}


def with_rows(data: dict[str, Any], rows: list[list[Any]]) -> dict[str, Any]:
    """Snapshot `data`, taken :func:`snapshot` ``since=len(rows)``, whole again with the
    history's older `rows` (those it left out) put back."""
    amended = data.get("amended")
    if not rows and amended is None:
        return data
    whole = {**data, "history": rows + data["history"]}
    if amended is not None:
        row, entry = whole.pop("amended")
        whole["history"][row] = entry
    return whole


def restore(model: Model, data: dict[str, Any], llm: LLMJudge | None = None) -> Matcher:
    """The matcher of :func:`snapshot` again, on `model` (records written before some
    parts were kept hold none: those start empty)."""
    matcher = Matcher(model, llm)
    matcher.position = data["position"]
    matcher.history = [row_of(row) for row in data["history"]]
    matcher.matched_at, matcher.start_ts = dict(data["matched_at"]), data["start_ts"]
    matcher.outputs = OutputLedger.from_json(data)
    matcher.effects = EffectWatch.from_json(data.get("effects"))
    matcher.removals = RemovalLedger.from_json(model.required_removals, data)
    matcher.reshaped = list(data.get("reshaped", ()))
    matcher.signs = FailureWatch.from_json(data.get("signs"))
    matcher.typed = tuple(tuple(text) for text in data.get("typed", ()))
    matcher.overlay = Overlay.from_json(data.get("overlay"))
    matcher.builder = StepBuilder.from_json(model.settings, data)
    matcher.status = None if data["status"] is None else Status(**data["status"])
    return matcher


def given_up(matcher: Matcher, seq: int | None, reason: str, cause: str, run_id: str,
             task: str) -> Matcher:
    """A matcher of `matcher`'s run failed for good at event `seq` for a `reason` outside
    what it showed (its stream failed it), even before its first event (`run_id` and `task`
    name the run then). It keeps the run's status and start only: a final status is all a
    failed run needs, and what it showed may be what made its record too large."""
    model = matcher.model
    failed = Matcher(model, matcher.llm)
    failed.start_ts = matcher.start_ts
    failed.status = matcher.status or Status(
        run_id, task, model_version=model.version,
        missing=[model.name(s) for s in model.essential if s not in model.soft])
    failed.fail(seq, reason, cause)
    return failed
