"""What a worker sends about a run: a verdict each time its status (or finality) changes,
a failure when its stream failed it (events missing, run too long), the finished run for
refinement, and dead letters for records it could not use."""
from __future__ import annotations

import json
import logging
from collections.abc import Callable

from stream.deadletter import dead_letter
from stream.judging.metrics import Metrics
from stream.judging.records import Output, RunRecord, Source
from stream.judging.runbook import RunBook
from stream.judging.settings import WorkerSettings
from stream.models.refine import is_success
from trustlayer.judge.faults import STREAM_FAULT
from trustlayer.judge.status import Status

log = logging.getLogger(__name__)

#: Characters of a verdict's reason and of each warning at most (a reason may quote what a
#: run showed, and a hostile run can show megabytes; the verdicts topic takes 1 MB records).
REASON_MAX = 2000


class Emitter:
    """Verdicts, failures, finished runs and dead letters into an :class:`Output`; what they
    change in a run, the run book does (:class:`~stream.judging.runbook.RunBook`)."""

    def __init__(self, runs: RunBook, settings: WorkerSettings, metrics: Metrics,
                 clock: Callable[[], float]):
        self.runs, self.settings, self.metrics, self.clock = runs, settings, metrics, clock

    def emit(self, rec: RunRecord, status: Status, out: Output, trigger: int | None,
             verdict_ts: float | None, pub: float | None) -> None:
        """Send the run's verdict if its status, finality or coverage changed (a milestone
        reached shows on a dashboard as it happens)."""
        key = [status.status, status.final, status.coverage]
        if key == rec.last_key:
            return
        # the verdict as published: every field, texts cut, and the triggering event's ts
        record = {**status.to_json(text_max=REASON_MAX), "verdict_ts": verdict_ts}
        self.runs.verdict(rec, key, record, trigger)
        out.verdicts.append((rec.run_id, record))
        if pub is not None:
            self.metrics.latency.labels(rec.task).observe(max(0.0, self.clock() - pub))
        if status.final and not rec.final:
            self.runs.finalise(rec, pub if pub is not None else self.clock())
            self.metrics.final(status, rec.release)

    def events_missing(self, rec: RunRecord, out: Output, trigger: int | None,
                       verdict_ts: float, pub: float | None, why: str) -> None:
        """Fail the run: an event it needs never came."""
        self.runs.drop_held(rec)  # its end among them: nothing more will come
        self.give_up(rec, out, trigger, verdict_ts, pub, f"events missing: {why}")

    def give_up(self, rec: RunRecord, out: Output, trigger: int | None, verdict_ts: float,
                pub: float | None, reason: str) -> None:
        """Fail the run for `reason`, a fault of its stream rather than of what it showed
        (cause ``stream_fault``; it is not learned from). A final verdict stays as it is."""
        self.runs.unlearnable(rec)
        if not rec.final:
            self.emit(rec, self.runs.give_up(rec, reason, STREAM_FAULT), out, trigger,
                      verdict_ts, pub)
        if rec.ended:
            self.finish(rec, out, pub)

    def incomplete(self, rec: RunRecord, out: Output, verdict_ts: float, silent: float,
                   last: Status | None = None) -> None:
        """Finalise a run whose end never came, as ``incomplete``: its last status (`last`,
        else its matcher's) and reason stay in the reason (it is not learned from,
        whatever comes later)."""
        matcher = self.runs.matcher(rec)
        if matcher.status is None or rec.final:
            return
        self.runs.unlearnable(rec)
        shown = last or matcher.status
        said = shown.status + (f": {shown.reason}" if shown.reason else "")
        # its runner or the broker went away, or the product hung the runner: not known,
        # so nobody's fault (never a product bug) and counted apart from failures
        status = matcher.incomplete(f"no end event for {silent:.0f} s after seq "
                                    f"{rec.next_seq - 1} (last status {said})", STREAM_FAULT)
        self.emit(rec, status, out, None, verdict_ts, None)

    def finish(self, rec: RunRecord, out: Output, pub: float | None) -> None:
        """The run's end event was fed (its verdict is final): hand a success a known runner
        attested to refinement, keep only what late duplicates need."""
        offsets = list(rec.offsets)
        matcher = self.runs.retire(rec, pub)
        verdict = matcher.status.verdict if matcher and matcher.status else None
        if self.settings.refine and rec.complete and is_success(
                rec.outcome, verdict, self.settings.refine_on_verdict, rec.runner):
            out.finished.append((rec.task, {"run_id": rec.run_id, "task": rec.task,
                                            "partition": rec.partition,
                                            "offsets": offsets,
                                            "outcome": rec.outcome, "verdict": verdict,
                                            "runner": rec.runner,
                                            "model_version": rec.version}))

    def after_end(self, rec: RunRecord, out: Output, topic: str) -> None:
        """Events held for a run that has ended go to the DLQ (``after_end``)."""
        for seq, held in self.runs.drop_held(rec):
            source = Source(rec.partition, held.offset, held.pub, topic)
            self.dead(out, rec.run_id.encode(), json.dumps(held.event).encode(), source,
                      "after_end", f"{topic}[{rec.partition}]@{held.offset}: run "
                      f"{rec.run_id!r} ended before seq {seq} (its verdict is final)")

    def dead(self, out: Output, key: bytes | None, value: bytes | None, source: Source,
             reason: str, error: str) -> None:
        """A dead letter for a record, counted by reason."""
        self.metrics.dlq.labels(reason).inc()
        out.dlq.append((key, dead_letter(key, value, source, reason, error)))
        log.info("DLQ %s: %s", reason, error[:500])
