"""What the streaming worker does with each event, without Kafka: importable and testable.

:class:`StreamProcessor` takes the records of ``trustlayer.events`` one at a time (value,
key, and where it came from: partition, offset, publish time) and keeps one
:class:`RunRecord` per run in a key-value store (the Faust table in :mod:`stream.worker.app`, a
dict in tests; the cache over it: :mod:`stream.judging.runbook`). For each run it

- feeds the core's incremental :class:`~trustlayer.judge.matcher.Matcher` in ``seq`` order, on the
  model version the run started with;
- ignores a ``(run_id, seq)`` seen before with the same content; one with other content
  goes to the dead letters and fails the run with cause ``stream_fault``
  (:meth:`StreamProcessor._repeated`), as does an event the judge cannot use
  (:mod:`trustlayer.judge.faults`); holds events that come early until the gap
  fills (at most ``reorder_window`` events / ``max_held_bytes``, and ``reorder_timeout``
  seconds; then the run fails with the reason "events missing");
- emits a verdict only when the run's status (or finality) changes (:mod:`stream.judging.emitter`);
- sends bad records to the dead-letter list with a reason (:mod:`stream.deadletter`) and
  goes on; so do events of a run after its end (``after_end``): a final verdict is never
  changed or re-opened;
- leaves silent runs to its timer (:mod:`stream.judging.silence`: deadlines, reorder timeouts).

Crash safety (at-least-once). The app acknowledges a source record (so that Faust may
commit its offset) only after the runs it changed were written by :meth:`RunBook.flush` and the
verdicts it caused were delivered (:class:`stream.worker.checkpoint.Checkpoint`); a run is written
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
from collections.abc import Callable, Iterable

from stream.deadletter import Rejected
from stream.judging.emitter import Emitter
from stream.judging.events import Decoded, decode_event
from stream.judging.metrics import Metrics
from stream.judging.records import (
    Held,
    Output,
    RunRecord,
    Source,
    Store,
    digest_of_same,
    event_digest,
)
from stream.judging.runbook import RunBook
from stream.judging.settings import WorkerSettings
from stream.judging.shadow import ShadowTrials
from stream.judging.silence import Silence
from stream.models.attest import canonical
from stream.models.registry import ModelRegistry
from trustlayer.errors import TraceError
from trustlayer.judge.faults import feed_checked
from trustlayer.judge.history import HISTORY_FIELDS, Observed
from trustlayer.observe.event_parsing import parse_event
from trustlayer.observe.trace_events import Event

log = logging.getLogger(__name__)


class StreamProcessor:
    """Runs' state and verdicts from a stream of event records (see the module doc).

    Parameters
    ----------
    registry : the models (a run uses the newest version of its task when it starts).
    store : where run records are kept (see :class:`Store`); written by :meth:`RunBook.flush`.
    settings : :class:`~stream.judging.settings.WorkerSettings`.
    metrics : :class:`Metrics` (a private registry if None).
    clock : wall time in seconds (``time.time``); used for latencies and the timer.

    The worker calls :meth:`process` for each record (with :meth:`read` ahead of it) and
    :meth:`count` after a batch, :meth:`revoke` and :meth:`assign` on a rebalance; the run
    book (:attr:`runs`: flush, delivered, confirm) and the timer (:attr:`silence`: tick)
    directly. Tests and benchmarks use :meth:`process_batch`.
    """

    def __init__(self, registry: ModelRegistry, store: Store,
                 settings: WorkerSettings | None = None, metrics: Metrics | None = None,
                 clock: Callable[[], float] = time.time):
        self.registry, self.store = registry, store
        self.settings = settings or WorkerSettings()
        self.metrics = metrics or Metrics()
        self.runs = RunBook(registry, store, self.metrics)
        self.emitter = Emitter(self.runs, self.settings, self.metrics, clock)
        self.silence = Silence(self.runs, self.emitter, self.settings, clock)
        self.shadow = ShadowTrials(registry, self.metrics, self.settings.shadow_runs)
        self._fed: Tally = Tally()  # events fed by task and kind, for the metrics
        registry.listeners.append(self.metrics.model_known)
        for task in registry.tasks():
            if (model := registry.latest(task)) is not None:
                self.metrics.model_known(model)

    def process_batch(self, records: Iterable[tuple[bytes | None, bytes | None, Source]]) -> Output:
        """Process ``(key, value, source)`` records in order (the runs they change are
        written to the store by :meth:`RunBook.flush`) and count them in the metrics."""
        out = Output()
        for key, value, source in records:
            self.process(key, value, source, out)
        self.count()
        return out

    def count(self) -> None:
        """Count the events processed since the last call in the metrics."""
        for (task, kind), count in self._fed.items():
            self.metrics.events.labels(task, kind).inc(count)
        self._fed.clear()

    def read(self, key: bytes | None, value: bytes | None, source: Source) -> Decoded | None:
        """The record's event, read and checked (screenshots too, from their headers) but
        not judged, for :meth:`process`; None for a record it refuses (it says why)."""
        try:
            return decode_event(key, value, _where(source), self.registry,
                                self.settings.images_dir)
        except Rejected:
            return None

    def process(self, key: bytes | None, value: bytes | None, source: Source,
                out: Output | None = None, decoded: Decoded | None = None) -> Output:
        """Process one record (not yet written to the store: see :meth:`RunBook.flush`), `decoded`
        by :meth:`read` if given. A record the worker fails on goes to the DLQ as
        ``internal_error`` (logged with its traceback): one record never stops the others."""
        out = out if out is not None else Output()
        where = _where(source)
        try:
            self._process(key, value, source, where, out, decoded)
        except Rejected as exc:
            self.emitter.dead(out, key, value, source, exc.reason, exc.message)
        except Exception as exc:  # noqa: BLE001 - a bug must not stop the other runs
            log.exception("%s: failed on the record", where)
            self.emitter.dead(out, key, value, source, "internal_error",
                              f"{where}: the worker failed on the record ({type(exc).__name__}: "
                              f"{exc})")
        return out

    def revoke(self) -> None:
        """Partitions were taken away: the run book writes and forgets its runs
        (:meth:`~stream.judging.runbook.RunBook.revoke`), the shadow trials their matchers."""
        self.runs.revoke()
        self.shadow.revoke()

    def assign(self, partitions: Iterable[int],
               stored: Iterable[tuple[str, bytes | dict]]) -> Output:
        """The table was recovered for `partitions`: the run book loads their runs from
        `stored` (key, value) pairs and returns the outboxes still to send; silence counts
        afresh."""
        self.silence.reset()
        return self.runs.assign(partitions, stored)

    # -- one record -----------------------------------------------------------------------------
    def _process(self, key: bytes | None, value: bytes | None, source: Source, where: str,
                 out: Output, decoded: Decoded | None) -> None:
        decoded = decoded or decode_event(key, value, where, self.registry,
                                          self.settings.images_dir)
        event, model = decoded.event, decoded.model
        rec = self.runs.record(event.run_id)
        if rec is None:
            if model is None:
                raise Rejected("no_model", f"{where}: no model for task {event.task!r}")
            self.runs.add(rec := RunRecord(
                event.run_id, event.task, model.version, source.partition,
                shadow_version=self.shadow.start(event.run_id, event.task)))
        seen = event.seq < rec.next_seq or str(event.seq) in rec.held
        if seen and source.partition == rec.partition and source.offset <= rec.last_offset:
            # processed before a restart: send again, unchanged, what it caused then (an
            # event below the offsets processed but never processed itself was skipped by
            # the consumer, a rebalance, and read again after a seek back: judged below)
            out.verdicts += self.runs.resent(rec, source.offset)
            return
        if event.task != rec.task:
            raise Rejected("wrong_task", f"{where}: task {event.task!r} differs from the run's "
                           f"task {rec.task!r}")
        if seen:
            self._repeated(rec, decoded, source, where, out)
            return
        if rec.ended:
            raise Rejected("after_end", f"{where}: run {rec.run_id!r} ended before seq "
                           f"{event.seq} (its verdict is final)")
        self.runs.took(rec, source.offset, read_fast=decoded.body is not None)
        if event.seq > rec.next_seq:
            self._hold(rec, decoded.obj, len(value or b""), event, source, out)
            return
        self._feed(rec, event, source.offset, source.timestamp, out, trigger=source.offset,
                   body=decoded.body)
        while (held := self.runs.next_held(rec)) is not None:
            try:
                early = parse_event(held.event, source=where, base_dir=self.settings.images_dir,
                                    settings=self.runs.model(rec).settings)
            except TraceError as exc:  # e.g. a referenced screenshot deleted meanwhile
                self.emitter.dead(out, None, json.dumps(held.event).encode(), source,
                                  exc.code, str(exc))
                self.emitter.events_missing(rec, out, source.offset, event.ts, source.timestamp,
                                            f"seq {rec.next_seq} could not be read again")
                break
            self._feed(rec, early, held.offset, held.pub, out, trigger=source.offset)
        if rec.ended:
            self.emitter.after_end(rec, out, source.topic)

    def _repeated(self, rec: RunRecord, decoded: Decoded, source: Source, where: str,
                  out: Output) -> None:
        """A ``(run_id, seq)`` seen before: ignored when it repeats the event (at-least-once
        delivery), else a dead letter, and the run's verdict, if not final yet, fails with
        cause ``stream_fault``: which of the two contents happened is unknown."""
        event, obj = decoded.event, decoded.obj
        held = rec.held.get(str(event.seq))
        known = event_digest(canonical(held.event)) if held else \
            rec.digests[event.seq] if event.seq < len(rec.digests) else None
        if known is None or digest_of_same(known, decoded.body or canonical(obj)):
            return
        self.runs.took(rec, source.offset)
        reused = event.seq == 0
        what = (f"a second run under the used run_id {rec.run_id!r}" if reused else
                f"seq {event.seq} of run {rec.run_id!r} repeated with other content")
        self.emitter.dead(out, rec.run_id.encode(), json.dumps(obj).encode(), source,
                          "run_id_reused" if reused else "conflicting_duplicate",
                          f"{where}: {what}" + (" (the run's verdict was final already)"
                                                 if rec.final else ""))
        self.emitter.give_up(rec, out, source.offset, event.ts, source.timestamp,
                             f"the stream is unreliable: {what} ({where})")

    def _hold(self, rec: RunRecord, obj: dict, size: int, event: Event, source: Source,
              out: Output) -> None:
        self.runs.hold(rec, event.seq, Held(source.offset, source.timestamp, size, obj))
        held_bytes = rec.held_bytes
        if len(rec.held) > self.settings.reorder_window \
                or held_bytes > self.settings.max_held_bytes:
            self.emitter.events_missing(rec, out, source.offset, event.ts, source.timestamp,
                                        f"seq {rec.next_seq} did not come before {len(rec.held)} "
                                        f"later events ({held_bytes} bytes)")

    def _feed(self, rec: RunRecord, event: Event, offset: int, pub: float, out: Output,
              trigger: int, body: bytes | None = None) -> None:
        """Feed the run's next `event` (`body`: its canonical JSON, if read) to its matcher."""
        self.runs.fed(rec, event, offset, pub, self.settings.runner_keys, body)
        self._fed[rec.task, event.kind] += 1
        limit = self.settings
        if event.seq >= limit.max_run_events and not rec.final:
            self.emitter.give_up(rec, out, trigger, event.ts, pub, f"run too long: more than "
                                 f"{limit.max_run_events} events (max_run_events)")
            return
        matcher = self.runs.matcher(rec)
        unknown = matcher.status.unknown_states if matcher.status else 0
        kept = len(matcher.history)
        status, fault = feed_checked(matcher, event)
        if fault is not None:
            self.runs.unlearnable(rec)
            source = Source(rec.partition, offset, pub)
            self.emitter.dead(out, rec.run_id.encode(), None, source, fault.kind,
                              f"{source.topic}[{rec.partition}]@{offset}: run {rec.run_id!r}: "
                              f"{fault.reason}")
        history_bytes = self.runs.grew(rec, sum(map(row_bytes, matcher.history[kept:])))
        if status.unknown_states > unknown:
            self.metrics.unknown.labels(rec.task).inc(status.unknown_states - unknown)
        if history_bytes > limit.max_history_bytes and not status.final:
            self.emitter.give_up(rec, out, trigger, event.ts, pub, f"run too long: its history "
                                 f"passed {limit.max_history_bytes} bytes at seq {event.seq} "
                                 f"(max_history_bytes)")
            return
        self.emitter.emit(rec, status, out, trigger, event.ts, pub)
        self.shadow.feed(rec, event)
        if rec.ended:
            decided = self.shadow.ended(rec, status)
            if decided is not None:
                out.models.append(decided)
            self.emitter.finish(rec, out, pub)


#: What naming its fields adds to a history row written as a JSON object (``"seq": ``, ...)
#: over the row written as a JSON list.
_FIELD_NAMES_BYTES = sum(len(json.dumps(name)) + 2 for name in HISTORY_FIELDS)


def row_bytes(row: Observed) -> int:
    """Bytes of history row `row` as the JSON object ``max_history_bytes`` was set for
    (``json.dumps(row._asdict())``), counted from its list form: a third less work, at
    every state of every run.

    >>> row = Observed(3, 12.5, ["s2"], ["click:Save"], shown="Erreur: fichier déjà là")
    >>> row_bytes(row) == len(json.dumps(row._asdict()))
    True
    """
    return len(json.dumps(row)) + _FIELD_NAMES_BYTES


def _where(source: Source) -> str:
    """The record named in messages: topic, partition and offset."""
    return f"{source.topic}[{source.partition}]@{source.offset}"
