"""How a matcher's verdict becomes final: at the run's end (the cause of a failure asked
of :mod:`trustlayer.judge.cause`), at a learned deadline, for an event that cannot be
judged, or as incomplete; and a conversation judged by what it changed. A part of
:class:`~trustlayer.judge.matcher.Matcher`, kept apart from the feeding of events."""
from __future__ import annotations

from trustlayer.compare.endings import at_an_end_place
from trustlayer.judge.cause import explain_failure
from trustlayer.judge.deadlines import overdue, overdue_from
from trustlayer.judge.effects import EffectWatch
from trustlayer.judge.history import Observed, row_index
from trustlayer.judge.milestones import MilestoneProgress
from trustlayer.judge.outputs import OutputLedger
from trustlayer.judge.reasons import (
    KEPT_LINE,
    MILESTONES_REACHED,
    NO_END,
    UNJUDGEABLE,
    WRONG_OUTPUT,
    Reason,
    quoted,
)
from trustlayer.judge.signs import FailureWatch, Sign
from trustlayer.judge.status import INCOMPLETE, PASSED, Status
from trustlayer.observe.edits import RemovalLedger, describe
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.observe.steps import StepBuilder
from trustlayer.observe.trace_events import Event


class RunEnd(MilestoneProgress):
    """The final verdicts of a matcher; its attributes are set by the matcher's
    constructor."""

    builder: StepBuilder
    #: the outputs the agent gave (an answer reported), checked at the end
    outputs: OutputLedger
    #: what a conversation changed and told
    effects: EffectWatch
    #: the lines the model's successful runs all removed, and whether this run did
    removals: RemovalLedger
    signs: FailureWatch
    #: transient milestones met with other counts
    reshaped: list[str]
    #: the time of the run's first event
    start_ts: float | None

    def _converse(self, event: Event | None, seq: int) -> Status:
        """A conversation's event (None: it ended after `seq` without its end event), judged
        by what the run changed and told (:mod:`trustlayer.judge.effects`)."""
        if event is not None and event.kind == "state":  # a row for the report's frames
            self.history.append(Observed(event.seq, event.ts, [], [], []))
        status, found = self.current, self.effects.judge(event, seq, self.model.effects)
        status.matched, status.missing, status.coverage = found.progress
        if found.failure is not None:
            self._fail(*found.failure)
        elif found.passed is not None:
            status.status, status.code, status.reason = PASSED, MILESTONES_REACHED, found.passed
            status.final, status.detected_at_seq = True, seq
        return status

    def _route_warnings(self) -> list[str]:
        return [f"took a route no successful run took: skipped '{self.model.name(sid)}'"
                for sid in self.model.incidental if sid not in self.matched_at] + [
            f"showed '{self.model.name(sid)}' with other counts than every successful run"
            for sid in self.reshaped] + self.signs.notes(self.model)

    def _fail(self, cause: str | None, why: Reason, details: str, seq: int | None = None) -> None:
        """Fail the run for good at event `seq` (else where `why` found it, the short reason)."""
        self.current.fail(cause, why.code, why.sentence(cause), details, why.seq, seq)

    def fail(self, seq: int | None, reason: str, cause: str | None,
             code: str = UNJUDGEABLE) -> Status:
        """Fail the run for good at event `seq`, for a `reason` outside what it showed (its
        own details; e.g. an event that cannot be judged: :mod:`trustlayer.judge.faults`),
        after the run's first event was fed (:meth:`feed` makes its status first)."""
        self._fail(cause, Reason(code, "", "", seq), reason)
        self.current.reason = reason  # given whole: its own sentence
        return self.current

    def incomplete(self, reason: str, cause: str | None) -> Status:
        """Finalise the run as ``incomplete`` for `reason`: its end never came, so no verdict
        on what it showed (code ``no_end``; it is not learned from)."""
        status = self.current
        status.status, status.final, status.cause = INCOMPLETE, True, cause
        status.reason = status.details = reason
        status.code = NO_END
        return status

    def close(self, seq: int) -> None:
        """Judge the run as ended after event `seq` (its end event, or its last one)."""
        if self.status is None or self.current.final:
            return
        lines = self.builder.previous_lines
        if self.history and lines is not None and not self.history[-1].ends \
                and self.outputs.answered(self.model) \
                and at_an_end_place(self.model, Fingerprint(lines)):
            self.history[-1] = self.history[-1]._replace(ends=True)  # answered after it
            self._advance(list(self.model.accepting), seq)
        if self.model.effects is not None:
            self._converse(None, seq)
            return
        wrong = self.outputs.wrong(self.model)
        last = self.history[-1].seq if self.history else seq
        if self.current.status == PASSED and wrong is None \
                and (kept := self.removals.missing(self.model.required_removals)):
            # the most precise sign of what the edits of a run that got that far missed
            path, line = kept[0]
            self._fail("agent_error", Reason(KEPT_LINE, f"{quoted(line.strip(), 4)} removed from "
                                             f"{path}", "its diffs showed it kept", last),
                       describe(kept), seq)
            return
        sign = self.signs.sign(self.model) if wrong is None else None
        if sign is not None and sign.cause is not None:
            self._fail(sign.cause, self._sign_reason(sign, last), sign.reason, seq)
            return
        if self.current.status == PASSED and wrong is None and sign is None:
            self.current.final = True
            self.current.warnings = self._route_warnings()
            return
        if wrong is not None:
            sign = Sign(f"the agent called {wrong[0]}:{wrong[1]}; every successful run called "
                        f"it with '{wrong[2]}'", None, f"the answer '{wrong[2]}'",
                        f"the agent answered '{wrong[1]}'", WRONG_OUTPUT)
        call = wrong[0] if wrong is not None else ""
        details, cause, why = explain_failure(self.model, self.history, self.position,
                                              list(self.matched_at), sign,
                                              self.outputs.outputs_shown.get(call, False),
                                              self.outputs.expected_shown.get(call, False))
        if not self.current.missing and not self._accepted():
            self.current.missing = [" or ".join(self.model.name(s) for s in self.model.accepting)]
        self._fail(cause, why, details, seq)

    def _sign_reason(self, sign: Sign, last: int) -> Reason:
        """The short reason of `sign`: the line of the state it is about, quoted when that
        state matched nothing (a tool's error: what the product did), else what the sign
        says, at the run's last state."""
        row = row_index(self.history, sign.at) if sign.at is not None else None
        entry = self.history[row] if row is not None else None
        if entry is not None and entry.shown:
            return Reason(sign.code, sign.expected, f"the screen showed '{entry.shown}'",
                          entry.seq)
        return Reason(sign.code, sign.expected, sign.shown, last)

    def late(self, now: float) -> tuple[Reason, str] | None:
        """The learned deadline passed at time `now` for a run not final nor passed, if
        any (:func:`~trustlayer.judge.deadlines.overdue`): what :meth:`tick` fails the run
        for, the run left as it is."""
        if not self._may_be_late() or self.start_ts is None:
            return None
        return overdue(self.model, self.history, self.position, self.start_ts, now)

    def late_from(self) -> float | None:
        """The time after which :meth:`late` finds a deadline passed, as the run stands
        (:func:`~trustlayer.judge.deadlines.overdue_from`): the timer need not ask before."""
        if not self._may_be_late() or self.start_ts is None:
            return None
        return overdue_from(self.model, self.history, self.position, self.start_ts)

    def _may_be_late(self) -> bool:
        return self.status is not None and not self.status.final \
            and self.status.status != PASSED

    def tick(self, now: float) -> Status | None:
        """Fail the run if a learned deadline has passed at time `now` (the stream's timer:
        :meth:`late`)."""
        late = self.late(now)
        if late is not None:
            self._fail("product_bug", *late)
        return self.status
