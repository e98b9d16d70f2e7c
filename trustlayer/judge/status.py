"""A run's status as the matcher leaves it after each event, and its one JSON shape.

Every place that writes a verdict writes :meth:`Status.to_json`: the stream's verdict
records (every field, texts cut for the topic's record limit, plus when the verdict was
made), ``trustlayer validate --format json`` and the demo (:data:`VALIDATE_FIELDS`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from trustlayer.errors import cut

RUNNING, AT_RISK, PASSED, FAILED = "running", "at_risk", "passed", "failed"
#: The status of a run the stream finalised without its end event (see stream.judging.silence).
INCOMPLETE = "incomplete"

#: The fields of a verdict, in the order its JSON lists them (``verdict`` is derived).
VERDICT_FIELDS = ("run_id", "task", "model_version", "status", "reason", "step", "cause", "code",
                  "details", "coverage", "matched", "missing", "detected_at_seq", "event_ts",
                  "final", "verdict", "warnings", "llm_calls", "unknown_states")
#: The fields of a line of ``trustlayer validate --format json`` (a final verdict).
VALIDATE_FIELDS = ("run_id", "task", "verdict", "coverage", "reason", "step", "cause", "code",
                   "details", "missing", "warnings", "llm_calls")


@dataclass
class Status:
    """The run's status after the last event fed."""

    run_id: str
    task: str
    status: str = RUNNING
    #: one sentence a person can act on (:mod:`trustlayer.judge.reasons`)
    reason: str | None = None
    #: a failed run's step: the ``seq`` of the event its reason is about (the report's
    #: divergence frame)
    step: int | None = None
    cause: str | None = None
    #: what code matches on: a constant of :mod:`trustlayer.judge.reasons`
    code: str | None = None
    #: the decision path behind the reason
    details: str | None = None
    coverage: float = 0.0
    matched: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    detected_at_seq: int | None = None
    final: bool = False
    llm_calls: int = 0
    unknown_states: int = 0
    model_version: int = 0
    event_ts: float | None = None

    @property
    def verdict(self) -> str | None:
        """``pass`` or ``fail`` once final (``incomplete`` for a run finalised without its
        end), else None."""
        if self.status == FAILED:
            return "fail"
        if self.status == INCOMPLETE:
            return INCOMPLETE
        return "pass" if self.final and self.status == PASSED else None

    def fail(self, cause: str | None, code: str, reason: str, details: str,
             step: int | None, seq: int | None = None) -> None:
        """Fail the run for good at event `seq` (else at its `step`), with the reason about
        event `step` (else `seq`).

        >>> status = Status("r1", "t")
        >>> status.fail("agent_error", "missing_milestone", "Failed at step 3: …", "…", 3, 9)
        >>> status.verdict, status.step, status.detected_at_seq, status.final
        ('fail', 3, 9, True)
        """
        self.status, self.cause, self.code = FAILED, cause, code
        self.reason, self.details, self.final = reason, details, True
        self.detected_at_seq = step if seq is None else seq
        self.step = step if step is not None else seq

    def to_json(self, fields: Sequence[str] = VERDICT_FIELDS,
                text_max: int | None = None) -> dict[str, Any]:
        """The status as JSON: `fields` (of :data:`VERDICT_FIELDS`) in that order, lists
        copied; with `text_max`, the reason, its details and each warning cut to that many
        characters (they may quote what a run showed, megabytes in a hostile run).

        >>> status = Status("r1", "t", status=FAILED, reason="x" * 12, final=True)
        >>> status.to_json(("run_id", "verdict", "reason"), text_max=4)
        {'run_id': 'r1', 'verdict': 'fail', 'reason': 'xxxx... (12 characters)'}
        """
        record: dict[str, Any] = {}
        for name in fields:
            value = getattr(self, name)
            if text_max is not None and name in ("reason", "details") and value is not None:
                value = cut(value, text_max)
            elif text_max is not None and name == "warnings":
                value = [cut(warning, text_max) for warning in value]
            record[name] = list(value) if isinstance(value, list) else value
        return record
