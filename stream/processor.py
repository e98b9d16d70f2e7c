"""What the streaming worker does with each event, without Kafka: importable and testable.

:class:`StreamProcessor` takes the records of ``trustlayer.events`` one at a time (value,
key, and where it came from: partition, offset, publish time) and keeps one
:class:`RunRecord` per run in a key-value store (the Faust table in :mod:`stream.app`, a
dict in tests). For each run it

- feeds the core's incremental :class:`~trustlayer.judge.matcher.Matcher` in ``seq`` order, on the
  model version the run started with;
- ignores a ``(run_id, seq)`` seen before, and holds events that come early until the gap
  fills (at most ``reorder_window`` events / ``max_held_bytes``, and ``reorder_timeout``
  seconds; then the run fails with the reason "events missing");
- emits a verdict only when the run's status (or finality) changes;
- sends bad records to the dead-letter list with a reason (:mod:`stream.deadletter`) and
  goes on; so do events of a run after its end (``after_end``): a final verdict is never
  changed or re-opened.

Crash safety (at-least-once). The app acknowledges a source record (so that Faust may
commit its offset) only after the runs it changed were written by :meth:`flush` and the
verdicts it caused were delivered (:class:`stream.checkpoint.Checkpoint`); a run is written
once per checkpoint however many of its events came. After a crash the records since the
last commit come again: a record whose offset the stored run already includes sends again,
unchanged, the verdicts it caused that were not known delivered when the run was written; one
the store does not include is processed again and gives the same verdicts (``verdict_ts`` is
the triggering event's ``ts``, not a clock). Verdicts made by the timer (deadlines) are kept
in the run's outbox in the store before they are sent, and sent again after a restart until
confirmed.
"""
from __future__ import annotations

import json
import logging
import time
from collections import Counter as Tally
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable


from trustlayer.compare.llm import LLMJudge, judge_for
from trustlayer.judge.matcher import FAILED, Matcher, Status
from trustlayer.model import Model
from trustlayer.observe.traces import parse_event
from trustlayer.errors import TraceError

from stream.deadletter import Rejected, dead_letter, decode_event, dlq_reason
from stream.metrics import Metrics
from stream.records import Output, RunRecord, Source, Store, verdict_json
from stream.refine import is_success
from stream.registry import ModelRegistry

log = logging.getLogger(__name__)

@dataclass
class WorkerSettings:
    """How the worker treats runs (model thresholds live in each model's settings).

    images_dir : screenshots given by path are read from here only (None: data URIs only).
    reorder_window : events held at most while waiting for a missing one.
    max_held_bytes : bytes of held events at most (inline screenshots are large).
    reorder_timeout : seconds a missing event is waited for once a later one came.
    deadlines : let the timer fail silent runs on the learned deadlines.
    refine : hand successful finished runs to online refinement.
    refine_on_verdict : also runs without a known outcome that the validator passed.
    retention : seconds a finished run stays in the table (late duplicates are ignored).
    max_run_events, max_history_bytes : a run with more events, or whose matcher keeps more
        bytes of history (its states and the actions between), fails with "run too long":
        with ``max_held_bytes`` they keep a run's record under the broker's 10 MB limit.
    """

    images_dir: Path | None = None
    reorder_window: int = 64
    max_held_bytes: int = 8 * 1024 * 1024
    reorder_timeout: float = 30.0
    deadlines: bool = True
    refine: bool = True
    refine_on_verdict: bool = False
    retention: float = 3600.0
    max_run_events: int = 20_000
    max_history_bytes: int = 1_000_000


class StreamProcessor:
    """Runs' state and verdicts from a stream of event records (see the module doc).

    Parameters
    ----------
    registry : the models (a run uses the newest version of its task when it starts).
    store : where run records are kept (see :class:`Store`); written by :meth:`flush`.
    settings : :class:`WorkerSettings`.
    metrics : :class:`Metrics` (a private registry if None).
    clock : wall time in seconds (``time.time``); used for latencies and the timer.
    """

    SENT_KEPT = 16

    def __init__(self, registry: ModelRegistry, store: Store, settings: WorkerSettings | None = None,
                 metrics: Metrics | None = None, clock: Callable[[], float] = time.time):
        self.registry, self.store = registry, store
        self.settings = settings or WorkerSettings()
        self.metrics = metrics or Metrics()
        self.clock = clock
        self.cache: dict[str, RunRecord] = {}
        self.matchers: dict[str, Matcher] = {}
        self.dirty: set[str] = set()
        self._fed: Tally = Tally()  # events fed by task and kind, for the metrics
        self.active: set[int] | None = None
        #: partition -> since when its fetches have succeeded without a break (see tick)
        self.reachable_since: dict[int, float] = {}
        self._judges: dict[tuple[str, int], LLMJudge | None] = {}
        registry.listeners.append(self.metrics.model_known)
        for task in registry.tasks():
            self.metrics.model_known(registry.latest(task))

    # -- records ----------------------------------------------------------------------------
    def process_batch(self, records: Iterable[tuple[bytes | None, bytes | None, Source]]) -> Output:
        """Process ``(key, value, source)`` records in order (the runs they change are
        written to the store by :meth:`flush`) and count them in the metrics."""
        out = Output()
        for key, value, source in records:
            self.process(key, value, source, out)
        for (task, kind), count in self._fed.items():
            self.metrics.events.labels(task, kind).inc(count)
        self._fed.clear()
        return out

    def process(self, key: bytes | None, value: bytes | None, source: Source,
                out: Output | None = None) -> Output:
        """Process one record (not yet written to the store: see :meth:`flush`). A record
        the worker fails on goes to the DLQ as ``internal_error`` (logged with its
        traceback): one record never stops the others."""
        out = out if out is not None else Output()
        where = f"{source.topic}[{source.partition}]@{source.offset}"
        try:
            self._process(key, value, source, where, out)
        except Rejected as exc:
            self._dead(out, key, value, source, exc.reason, exc.message)
        except Exception as exc:  # noqa: BLE001 - a bug must not stop the other runs
            log.exception("%s: failed on the record", where)
            self._dead(out, key, value, source, "internal_error",
                       f"{where}: the worker failed on the record ({type(exc).__name__}: "
                       f"{exc})")
        return out

    def _process(self, key: bytes | None, value: bytes | None, source: Source, where: str,
                 out: Output) -> None:
        decoded = decode_event(key, value, where, self.registry, self.settings.images_dir)
        event, model = decoded.event, decoded.model
        rec = self._record(event.run_id)
        if rec is None:
            if model is None:
                raise Rejected("no_model", f"{where}: no model for task {event.task!r}")
            rec = RunRecord(event.run_id, event.task, model.version, source.partition)
            self.cache[rec.run_id] = rec
        elif source.partition == rec.partition and source.offset <= rec.last_offset:
            # processed before a restart: send again, unchanged, what it caused then
            out.verdicts += [(rec.run_id, item["record"]) for item in rec.sent
                             if item["trigger"] == source.offset]
            return
        if event.task != rec.task:
            raise Rejected("wrong_task", f"{where}: task {event.task!r} differs from the run's "
                           f"task {rec.task!r}")
        if event.seq < rec.next_seq or str(event.seq) in rec.held:
            return  # a duplicate (run_id, seq): ignored
        if rec.ended:
            raise Rejected("after_end", f"{where}: run {rec.run_id!r} ended before seq "
                           f"{event.seq} (its verdict is final)")
        rec.last_offset = source.offset
        self.dirty.add(rec.run_id)
        if event.seq > rec.next_seq:
            self._hold(rec, decoded.obj, len(value or b""), event, source, out)
            return
        self._feed(rec, event, source.offset, source.timestamp, out, trigger=source.offset)
        while not rec.ended and str(rec.next_seq) in rec.held:
            held = rec.held.pop(str(rec.next_seq))
            try:
                early = parse_event(held["event"], source=where, base_dir=self.settings.images_dir,
                                    settings=self._model(rec).settings)
            except TraceError as exc:  # e.g. a referenced screenshot deleted meanwhile
                self._dead(out, None, json.dumps(held["event"]).encode(), source,
                           dlq_reason(exc.message), str(exc))
                self._events_missing(rec, out, source.offset, event.ts, source.timestamp,
                                     f"seq {rec.next_seq} could not be read again")
                break
            self._feed(rec, early, held["offset"], held["pub"], out, trigger=source.offset)
        if rec.ended:
            self._after_end(rec, out, source.topic)

    def flush(self, run_ids: Iterable[str] | None = None) -> None:
        """Write the runs changed since they were last written (all, or those of `run_ids`)
        to the store: once per run however many of its events came meanwhile."""
        for run_id in sorted(self.dirty if run_ids is None else self.dirty & set(run_ids)):
            self.dirty.discard(run_id)
            rec = self.cache.get(run_id)
            if rec is None:
                continue
            matcher = self.matchers.get(run_id)
            if matcher is not None:
                rec.snapshot = matcher.snapshot()
            self.store.put(run_id, rec.partition, rec.encode())

    def delivered(self, verdicts: Iterable[tuple[str, dict]]) -> None:
        """These verdicts reached the broker: their runs need not send them again when
        their records come again after a restart (see :meth:`process`)."""
        for run_id, record in verdicts:
            rec = self.cache.get(run_id)
            if rec is not None and rec.sent:
                rec.sent = [item for item in rec.sent if item["record"] is not record]

    # -- the timer ----------------------------------------------------------------------------
    def tick(self, wall: float | None = None,
             caught_up: Callable[[int], bool] = lambda partition: True,
             fetched: Callable[[int], bool] = lambda partition: True) -> Output:
        """Fail silent runs whose deadline passed or whose missing event never came.

        `caught_up(partition)`: every record published to the partition so far has been
        processed (a worker behind its backlog must not call runs silent); `fetched(
        partition)`: the consumer fetched from it lately (the broker answers). Silence is
        counted from the later of a run's last event (its publish time) and the moment the
        partition's fetches last resumed (this worker's first tick with it, or the broker's
        return after an outage): runs quiet while the broker was away or no worker had
        them get their whole deadline again, rather than failing all at once. A run's clock
        is its last event's ``ts`` plus that silence. Verdicts made here go to the run's
        outbox: :meth:`flush`, wait for the store, send them, then :meth:`confirm` them.
        Also drops finished runs older than ``retention``.
        """
        wall = self.clock() if wall is None else wall
        out = Output()
        for partition in {rec.partition for rec in self.cache.values()}:
            if fetched(partition):
                self.reachable_since.setdefault(partition, wall)
            else:
                self.reachable_since.pop(partition, None)
        for rec in list(self.cache.values()):
            if self.active is not None and rec.partition not in self.active:
                continue
            if rec.final:
                if rec.closed_at is not None and wall - rec.closed_at > self.settings.retention \
                        and not rec.outbox:
                    self.forget(rec)
                continue
            since = self.reachable_since.get(rec.partition)
            if since is None or not caught_up(rec.partition):
                continue
            held_since = rec.held_since
            if held_since is not None and \
                    wall - max(held_since, since) > self.settings.reorder_timeout:
                self._events_missing(rec, out, None, self._run_clock(rec, wall, since), None,
                                     f"seq {rec.next_seq} did not come within "
                                     f"{self.settings.reorder_timeout:.0f} s")
            elif self.settings.deadlines and rec.last_pub is not None:
                now = self._run_clock(rec, wall, since)
                status = self._matcher(rec).tick(now)
                if status is not None:
                    self._emit(rec, status, out, None, now, None)
        self._export_open_runs()
        return out

    def confirm(self, run_id: str, records: Iterable[dict]) -> None:
        """The timer's verdicts for `run_id` were delivered: clear them from its outbox."""
        rec = self.cache.get(run_id)
        if rec is None:
            return
        done = list(records)
        rec.outbox = [r for r in rec.outbox if r not in done]
        self.dirty.add(run_id)

    def forget(self, rec: RunRecord) -> None:
        self.cache.pop(rec.run_id, None)
        self.matchers.pop(rec.run_id, None)
        self.dirty.discard(rec.run_id)
        self.store.put(rec.run_id, rec.partition, None)

    # -- rebalancing ----------------------------------------------------------------------------
    def revoke(self) -> None:
        """Partitions were taken away: write the runs changed since the last checkpoint and
        forget the cached runs (the store keeps them)."""
        self.flush()
        self.cache.clear()
        self.matchers.clear()
        self.active = set()

    def assign(self, partitions: Iterable[int], stored: Iterable[tuple[str, bytes]]) -> Output:
        """The table was recovered for `partitions`: load their runs from `stored` (key,
        value) pairs and return the outboxes still to send."""
        self.active = set(partitions)
        self.reachable_since.clear()
        self.cache.clear()
        self.matchers.clear()
        out = Output()
        for run_id, value in stored:
            try:
                rec = RunRecord.decode(value)
            except (ValueError, TypeError):
                log.warning("run %s: unreadable record in the table, ignored", run_id)
                continue
            if rec.partition in self.active:
                self.cache[run_id] = rec
                out.verdicts += [(run_id, record) for record in rec.outbox]
        self._export_open_runs()
        return out

    def open_runs(self) -> Tally:
        return Tally(rec.task for rec in self.cache.values() if not rec.final)

    # -- internals ------------------------------------------------------------------------------
    @staticmethod
    def _run_clock(rec: RunRecord, wall: float, since: float) -> float:
        """Now in the run's own time: its last event's ts (or its earliest held event's)
        plus the wall time since that event was published or since `since`, whichever is
        later (no clock shared with runners)."""
        if rec.last_pub is not None:
            return rec.last_ts + (wall - max(rec.last_pub, since))
        first = min(rec.held.values(), key=lambda h: h["pub"])
        return first["event"]["ts"] + (wall - max(first["pub"], since))

    def _record(self, run_id: str) -> RunRecord | None:
        rec = self.cache.get(run_id)
        if rec is None:
            value = self.store.get(run_id)
            if value is not None:
                rec = self.cache[run_id] = RunRecord.decode(value)
        return rec

    def _model(self, rec: RunRecord) -> Model:
        model = self.registry.get(rec.task, rec.version)
        if model is None:  # e.g. compacted away from the models topic
            model = self.registry.latest(rec.task)
            log.warning("run %s: model %s version %d unknown here, using version %d",
                        rec.run_id, rec.task, rec.version, model.version)
            rec.version = model.version
        return model

    def _judge(self, model: Model) -> LLMJudge | None:
        key = (model.task, model.version)
        if key not in self._judges:
            self._judges[key] = judge_for(model.settings.llm)
        return self._judges[key]

    def _matcher(self, rec: RunRecord) -> Matcher:
        matcher = self.matchers.get(rec.run_id)
        if matcher is None:
            model = self._model(rec)
            matcher = (Matcher.restore(model, rec.snapshot, self._judge(model))
                       if rec.snapshot else Matcher(model, self._judge(model)))
            self.matchers[rec.run_id] = matcher
        return matcher

    def _hold(self, rec: RunRecord, obj: dict, size: int, event, source: Source,
              out: Output) -> Output:
        rec.held[str(event.seq)] = {"offset": source.offset, "pub": source.timestamp,
                                    "size": size, "event": obj}
        held_bytes = sum(h["size"] for h in rec.held.values())
        if len(rec.held) > self.settings.reorder_window or held_bytes > self.settings.max_held_bytes:
            self._events_missing(rec, out, source.offset, event.ts, source.timestamp,
                                 f"seq {rec.next_seq} did not come before {len(rec.held)} later "
                                 f"events ({held_bytes} bytes)")
        return out

    def _feed(self, rec: RunRecord, event, offset: int, pub: float, out: Output,
              trigger: int) -> None:
        rec.next_seq = event.seq + 1
        if rec.complete:
            rec.offsets.append(offset)
        rec.last_ts, rec.last_pub = event.ts, pub
        if event.kind == "end":
            rec.ended, rec.outcome = True, event.outcome
        self._fed[rec.task, event.kind] += 1
        limit = self.settings
        if event.seq >= limit.max_run_events and not rec.final:
            self._give_up(rec, out, trigger, event.ts, pub, f"run too long: more than "
                          f"{limit.max_run_events} events (max_run_events)")
            return
        matcher = self._matcher(rec)
        unknown = matcher.status.unknown_states if matcher.status else 0
        kept = len(matcher.history)
        status = matcher.feed(event)
        rec.history_bytes += sum(len(json.dumps(entry)) for entry in matcher.history[kept:])
        if status.unknown_states > unknown:
            self.metrics.unknown.labels(rec.task).inc(status.unknown_states - unknown)
        if rec.history_bytes > limit.max_history_bytes and not status.final:
            self._give_up(rec, out, trigger, event.ts, pub, f"run too long: its history passed "
                          f"{limit.max_history_bytes} bytes at seq {event.seq} (max_history_bytes)")
            return
        self._emit(rec, status, out, trigger, event.ts, pub)
        if rec.ended:
            self._finish(rec, out, pub)

    def _events_missing(self, rec: RunRecord, out: Output, trigger: int | None, verdict_ts: float,
                        pub: float | None, why: str) -> None:
        """Fail the run: an event it needs never came."""
        if any(h["event"].get("kind") == "end" for h in rec.held.values()):
            rec.ended = True  # its end came early: nothing more will come
        rec.held = {}
        self._give_up(rec, out, trigger, verdict_ts, pub, f"events missing: {why}")

    def _give_up(self, rec: RunRecord, out: Output, trigger: int | None, verdict_ts: float,
                 pub: float | None, reason: str) -> None:
        """Fail the run for `reason`, a fault of its stream rather than of what it showed
        (it is not learned from)."""
        rec.complete, rec.offsets = False, []
        if rec.final:
            if rec.ended:
                self._finish(rec, out, pub)
            return
        matcher = self._matcher(rec)
        if matcher.status is None:
            model = matcher.model
            matcher.status = Status(rec.run_id, rec.task, model_version=model.version,
                                   missing=[model.name(s) for s in model.essential
                                            if s not in model.soft])
        status = matcher.status
        status.status, status.cause, status.final = FAILED, None, True
        status.reason = reason
        status.detected_at_seq = rec.next_seq - 1 if rec.next_seq else None
        # its status is all a failed run needs: the history may be what made it too long
        # (one event at the topic's limit left a record over the changelog's)
        kept = Matcher(matcher.model, matcher.llm)
        kept.status, kept.start_ts = status, matcher.start_ts
        self.matchers[rec.run_id] = kept
        self._emit(rec, status, out, trigger, verdict_ts, pub)
        if rec.ended:
            self._finish(rec, out, pub)

    def _emit(self, rec: RunRecord, status: Status, out: Output, trigger: int | None,
              verdict_ts: float | None, pub: float | None) -> None:
        key = [status.status, status.final]
        if key == rec.last_key:
            return
        rec.last_key = key
        record = verdict_json(status, verdict_ts)
        if trigger is None:
            rec.outbox.append(record)
        else:
            rec.sent = (rec.sent + [{"trigger": trigger, "record": record}])[-self.SENT_KEPT:]
        self.dirty.add(rec.run_id)
        out.verdicts.append((rec.run_id, record))
        if pub is not None:
            self.metrics.latency.labels(rec.task).observe(max(0.0, self.clock() - pub))
        if status.final and not rec.final:
            rec.final = True
            rec.closed_at = pub if pub is not None else self.clock()
            self.metrics.final(status)

    def _finish(self, rec: RunRecord, out: Output, pub: float | None) -> None:
        """The run's end event was fed (its verdict is final): hand a success to refinement,
        keep only what late duplicates need."""
        matcher = self.matchers.pop(rec.run_id, None)
        verdict = matcher.status.verdict if matcher and matcher.status else None
        if self.settings.refine and rec.complete and is_success(
                rec.outcome, verdict, self.settings.refine_on_verdict):
            out.finished.append((rec.task, {"run_id": rec.run_id, "task": rec.task,
                                            "partition": rec.partition,
                                            "offsets": list(rec.offsets),
                                            "outcome": rec.outcome, "verdict": verdict,
                                            "model_version": rec.version}))
        rec.snapshot, rec.offsets = None, []
        rec.closed_at = pub if pub is not None else rec.closed_at
        self.dirty.add(rec.run_id)

    def _after_end(self, rec: RunRecord, out: Output, topic: str) -> None:
        """Events held for a run that has ended go to the DLQ (``after_end``)."""
        for seq, held in sorted(rec.held.items(), key=lambda item: int(item[0])):
            source = Source(rec.partition, held["offset"], held["pub"], topic)
            self._dead(out, rec.run_id.encode(), json.dumps(held["event"]).encode(), source,
                       "after_end", f"{topic}[{rec.partition}]@{held['offset']}: run "
                       f"{rec.run_id!r} ended before seq {seq} (its verdict is final)")
        rec.held = {}

    def _dead(self, out: Output, key: bytes | None, value: bytes | None, source: Source,
              reason: str, error: str) -> Output:
        self.metrics.dlq.labels(reason).inc()
        out.dlq.append((key, dead_letter(key, value, source, reason, error)))
        log.info("DLQ %s: %s", reason, error[:500])
        return out

    def _export_open_runs(self) -> None:
        counts = self.open_runs()
        for task in set(counts) | set(self.registry.tasks()):
            self.metrics.open_runs.labels(task).set(counts.get(task, 0))
