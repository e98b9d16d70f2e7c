"""The runs one worker holds, and the one place their state changes: their records cached
over the store, their matchers, and what feeding, holding, giving up, finalising and a
rebalance do to them.

A run's :class:`~stream.judging.records.RunRecord` is read from the store when one of its events
first comes and then kept in memory; :meth:`RunBook.flush` writes the runs changed since
they were last written, once however many of their events came meanwhile, a long run's in
parts (:mod:`stream.judging.parts`). A run finished with (final, ended, nothing left to
send) is then let go: the store alone keeps it for its retention, and a late duplicate of
its events reads it back. Kept in memory for their hour, the finished runs made every full
garbage collection walk them all (benchmarks/retained_runs.py: 5-10 us a run, seconds for
the million runs a busy worker keeps), holding the worker meanwhile.

A run's :class:`~trustlayer.judge.matcher.Matcher` is restored from the record's snapshot,
on the model version the run started with (the newest one if that version is unknown here).

The processor, the emitter, the silence timer and the shadow trials decide *what* happens to
a run; they ask the run book to do it, and never change a record, a matcher or what is to be
written themselves. A verdict caused by a record (its offset: the trigger) is kept in the run's
``sent`` list (the last :attr:`RunBook.SENT_KEPT`) so that the record, coming again after a
restart, sends it again; one made by the timer (no trigger) waits in the run's ``outbox``
until :meth:`RunBook.confirm`.
"""
from __future__ import annotations

import logging
from collections import Counter as Tally
from collections.abc import Callable, Container, Iterable

from stream.judging.metrics import Metrics
from stream.judging.parts import (
    PART_EVENTS,
    head_key,
    is_part_key,
    joined,
    part_key,
    seal,
    unsealed,
)
from stream.judging.records import Held, Output, RunRecord, Sent, Store, event_digest
from stream.judging.run_watch import RunWatch
from stream.models.attest import CHAIN_START, attested_by, canonical, chain_link
from stream.models.registry import ModelRegistry
from trustlayer.compare.llm import LLMJudge, judge_for
from trustlayer.judge.matcher import Matcher
from trustlayer.judge.resume import given_up, restore, snapshot, with_rows
from trustlayer.judge.status import Status
from trustlayer.model import Model
from trustlayer.observe.trace_events import Event

log = logging.getLogger(__name__)


class RunBook:
    """The runs of the partitions assigned to this worker, their matchers and which of them
    changed since they were written."""

    SENT_KEPT = 16

    def __init__(self, registry: ModelRegistry, store: Store, metrics: Metrics,
                 part_events: int = PART_EVENTS):
        self.registry, self.store, self.metrics = registry, store, metrics
        self.part_events = part_events
        self._cache: dict[str, RunRecord] = {}
        self._watch = RunWatch()  # the cached runs as the timer reads them
        self._matchers: dict[str, Matcher] = {}
        # the sealed history rows of runs read from the store, until their matcher is restored
        self._rows: dict[str, list[list]] = {}
        self._dirty: set[str] = set()
        self._active: set[int] | None = None  # None until the first assignment
        self._judges: dict[tuple[str, int], LLMJudge | None] = {}

    # -- which runs -------------------------------------------------------------------------------
    @property
    def assigned(self) -> bool:
        """Partitions were assigned (the first assignment's runs are loaded)."""
        return self._active is not None

    def record(self, run_id: str) -> RunRecord | None:
        """The run's record: cached, else read from the store (None for a new run)."""
        rec = self._cache.get(run_id)
        if rec is None and (stored := self._stored(run_id)) is not None:
            rec = self._cached(self._read(stored, self.store.get))
        return rec

    def _stored(self, run_id: str) -> RunRecord | None:
        """The store's head of the run (None if it holds none)."""
        value = self.store.get(head_key(run_id))
        return None if value is None else RunRecord.decode(value)

    def _cached(self, rec: RunRecord) -> RunRecord:
        """`rec`, kept in memory."""
        self._cache[rec.run_id] = rec
        self._watch.held(rec)
        return rec

    def _read(self, rec: RunRecord, stored: Callable[[str], bytes | dict | None]) -> RunRecord:
        """`rec`, a head just read, whole again with its parts (`stored`: value by key)."""
        if rec.parts:
            rows = joined(rec, [stored(part_key(rec.run_id, k)) for k in range(rec.parts)])
            if rows:
                self._rows[rec.run_id] = rows
        return rec

    def records(self) -> list[RunRecord]:
        """The runs held in memory."""
        return list(self._cache.values())

    def due(self, now: float) -> list[RunRecord]:
        """The runs held in memory without a final verdict that the timer looks at `now`
        (:meth:`RunWatch.due`): each is given its next time by :meth:`wake`."""
        return self._watch.due(now)

    def wake(self, rec: RunRecord, at: float | None) -> None:
        """The timer looks at `rec` again at its first tick at or after `at` (None: once an
        event of it comes)."""
        self._watch.wake(rec, at)

    def park(self, rec: RunRecord) -> None:
        """The timer looks at `rec` again once its partition is no longer waited for
        (:meth:`unpark`) or an event of it comes."""
        self._watch.park(rec)

    def unpark(self, waiting: Container[int]) -> None:
        """The partitions not in `waiting` are no longer waited for (:meth:`park`)."""
        self._watch.unpark(waiting)

    def look_again(self) -> None:
        """The timer's next tick looks at every run without a final verdict."""
        self._watch.look_again()

    def partitions(self) -> list[int]:
        """The partitions of the runs held in memory."""
        return self._watch.partitions()

    def closed_before(self, when: float) -> list[RunRecord]:
        """The finished runs that closed before `when`, assigned here and with nothing left
        in their outbox (those are looked at again next time): to forget."""
        return self._watch.closed_before(when, self._kept,
                                         lambda rec: bool(rec.outbox) or not self.active(rec))

    def _kept(self, run_id: str) -> RunRecord | None:
        """The run's record held in memory, else the store's head of it (not held again)."""
        rec = self._cache.get(run_id)
        return self._stored(run_id) if rec is None else rec

    def _finished_with(self, rec: RunRecord) -> bool:
        """Whether the run needs nothing in memory: final and ended, its matcher gone,
        nothing held or left to send (see the module doc)."""
        return rec.final and rec.ended and rec.closed_at is not None and not rec.outbox \
            and not rec.held and rec.run_id not in self._matchers

    def active(self, rec: RunRecord) -> bool:
        """The run's partition is assigned here (all are before the first assignment)."""
        return self._active is None or rec.partition in self._active

    def add(self, rec: RunRecord) -> None:
        """A run starts with `rec`."""
        self._cached(rec)

    def model(self, rec: RunRecord) -> Model:
        """The model version the run started with, or the newest one if it is unknown here."""
        model = self.registry.get(rec.task, rec.version)
        if model is None:  # e.g. compacted away from the models topic
            model = self.registry.latest(rec.task)
            if model is None:
                raise LookupError(f"run {rec.run_id}: no model of task {rec.task}")
            log.warning("run %s: model %s version %d unknown here, using version %d",
                        rec.run_id, rec.task, rec.version, model.version)
            rec.version = model.version
        return model

    def matcher(self, rec: RunRecord) -> Matcher:
        """The run's matcher, restored from its record's snapshot when not in memory."""
        matcher = self._matchers.get(rec.run_id)
        if matcher is None:
            model = self.model(rec)
            matcher = (restore(model, with_rows(rec.snapshot, self._rows.get(rec.run_id, [])),
                               self._judge(model))
                       if rec.snapshot else Matcher(model, self._judge(model)))
            self._matchers[rec.run_id] = matcher
            self._rows.pop(rec.run_id, None)  # the matcher holds them now
        return matcher

    def _judge(self, model: Model) -> LLMJudge | None:
        key = (model.task, model.version)
        if key not in self._judges:
            self._judges[key] = judge_for(model.settings.llm)
        return self._judges[key]

    # -- one run's events -------------------------------------------------------------------------
    def took(self, rec: RunRecord, offset: int, read_fast: bool = True) -> None:
        """The record at `offset` changed the run (`read_fast`: its event was read by
        orjson, see :attr:`RunRecord.plain_numbers`): written at the next :meth:`flush`,
        looked at by the timer's next tick."""
        rec.last_offset = max(rec.last_offset, offset)
        rec.plain_numbers &= read_fast
        self._dirty.add(rec.run_id)
        self._watch.touched(rec)

    def resent(self, rec: RunRecord, offset: int) -> list[tuple[str, dict]]:
        """The verdicts the record at `offset` caused before, to send again unchanged."""
        return [(rec.run_id, item.record) for item in rec.sent if item.trigger == offset]

    def hold(self, rec: RunRecord, seq: int, held: Held) -> None:
        """Event `seq` came before its turn: keep it until the gap fills."""
        rec.held[str(seq)] = held

    def next_held(self, rec: RunRecord) -> Held | None:
        """The held event whose turn came, taken out of the held ones (None if it did not come)."""
        return None if rec.ended else rec.held.pop(str(rec.next_seq), None)

    def drop_held(self, rec: RunRecord) -> list[tuple[int, Held]]:
        """Forget the held events (their run ended or failed): returned by seq. An end
        among them ends the run: nothing more will come."""
        dropped = sorted(((int(seq), held) for seq, held in rec.held.items()),
                         key=lambda item: item[0])
        if any(held.event.get("kind") == "end" for _, held in dropped):
            rec.ended = True
        rec.held = {}
        return dropped

    def fed(self, rec: RunRecord, event: Event, offset: int, pub: float,
            runner_keys: dict[str, bytes], body: bytes | None = None) -> None:
        """`event`, published at offset `offset` and time `pub`, is the run's next: its
        digest, its link in the run's chain (or who attested the end), its release; `body`
        is its canonical JSON if reading gave it."""
        rec.next_seq = event.seq + 1
        if event.seq == 0 and event.meta and isinstance(event.meta.get("agent_version"), str):
            rec.release = event.meta["agent_version"]
        body = body if body is not None else canonical(event.raw)
        rec.digests.append(event_digest(body))
        chain = rec.chain or CHAIN_START
        if event.kind == "end":
            rec.runner = attested_by(event.raw, chain, runner_keys)
        else:
            rec.chain = chain_link(chain, body)
        if rec.complete:
            rec.offsets.append(offset)
        rec.last_ts, rec.last_pub = event.ts, pub
        if event.kind == "end":
            rec.ended, rec.outcome = True, event.outcome

    def grew(self, rec: RunRecord, size: int) -> int:
        """The run's history grew by `size` bytes: its size now."""
        rec.history_bytes += size
        return rec.history_bytes

    def unlearnable(self, rec: RunRecord) -> None:
        """The run is not learned from (its stream failed it, or it is incomplete)."""
        rec.complete, rec.offsets = False, []
        rec.sealed[1] = 0

    # -- one run's verdicts -----------------------------------------------------------------------
    def give_up(self, rec: RunRecord, reason: str, cause: str) -> Status:
        """Fail the run for good for `reason`, outside what it showed: its new status."""
        failed = given_up(self.matcher(rec), rec.next_seq - 1 if rec.next_seq else None,
                          reason, cause, rec.run_id, rec.task)
        self._matchers[rec.run_id] = failed
        rec.sealed[2] = 0  # it keeps no history
        return failed.current

    def verdict(self, rec: RunRecord, key: list, record: dict, trigger: int | None) -> None:
        """The run's verdict `record` (status and finality: `key`) is to be sent: kept in
        ``sent`` for its `trigger`, or in the outbox until confirmed when the timer made it."""
        rec.last_key = key
        if trigger is None:
            rec.outbox.append(record)
        else:
            rec.sent = (rec.sent + [Sent(trigger, record)])[-self.SENT_KEPT:]
        self._dirty.add(rec.run_id)

    def finalise(self, rec: RunRecord, at: float) -> None:
        """The run's verdict became final at time `at`."""
        rec.final, rec.closed_at = True, at
        self._watch.closed(rec, at)

    def retire(self, rec: RunRecord, at: float | None) -> Matcher | None:
        """The run's end was fed (at time `at`, if known): its matcher (returned) and
        snapshot are no longer needed, only what late duplicates need is kept."""
        matcher = self._matchers.pop(rec.run_id, None)
        self._rows.pop(rec.run_id, None)
        rec.snapshot, rec.offsets = None, []
        rec.sealed[1:] = [0, 0]
        if at is not None and at != rec.closed_at:
            rec.closed_at = at
            if rec.final:
                self._watch.closed(rec, at)
        self._dirty.add(rec.run_id)
        return matcher

    def confirm(self, run_id: str, records: Iterable[dict]) -> None:
        """The timer's verdicts for `run_id` were delivered: clear them from its outbox."""
        rec = self._cache.get(run_id)
        if rec is None:
            return
        done = list(records)
        rec.outbox = [r for r in rec.outbox if r not in done]
        self._dirty.add(run_id)

    def delivered(self, verdicts: Iterable[tuple[str, dict]]) -> None:
        """These verdicts reached the broker: their runs need not send them again when
        their records come again after a restart."""
        for run_id, record in verdicts:
            rec = self._cache.get(run_id)
            if rec is not None and rec.sent:
                rec.sent = [item for item in rec.sent if item.record is not record]

    # -- the store and rebalances -----------------------------------------------------------------
    def flush(self, run_ids: Iterable[str] | None = None) -> None:
        """Write the runs changed since they were last written (all, or those of `run_ids`)
        to the store: once per run however many of its events came meanwhile."""
        for run_id in sorted(self._dirty if run_ids is None else self._dirty & set(run_ids)):
            self._dirty.discard(run_id)
            rec = self._cache.get(run_id)
            if rec is None:
                continue
            matcher = self._matchers.get(run_id)
            if matcher is not None:
                if unsealed(rec) >= self.part_events:
                    rows = [list(row) for row in matcher.history[rec.sealed[2]:]]
                    self.store.put(part_key(run_id, rec.parts), rec.partition, seal(rec, rows))
                rec.snapshot = snapshot(matcher, since=rec.sealed[2])
            self.store.put(head_key(run_id), rec.partition, rec.encode())
            if self._finished_with(rec):  # (let go: the store keeps it)
                del self._cache[run_id]
                self._watch.dropped(rec)

    def forget(self, rec: RunRecord) -> None:
        """Drop the run, here and in the store (its parts too)."""
        if self._cache.pop(rec.run_id, None) is not None:
            self._watch.dropped(rec)
        self._matchers.pop(rec.run_id, None)
        self._rows.pop(rec.run_id, None)
        self._dirty.discard(rec.run_id)
        for number in range(rec.parts):
            self.store.put(part_key(rec.run_id, number), rec.partition, None)
        self.store.put(head_key(rec.run_id), rec.partition, None)

    def revoke(self) -> None:
        """Partitions were taken away: write the runs changed since the last checkpoint and
        forget the cached runs (the store keeps them)."""
        self.flush()
        self._forget_all()
        self._active = set()

    def _forget_all(self) -> None:
        """Drop every run held in memory (the store keeps them)."""
        for held in (self._cache, self._matchers, self._rows, self._watch):
            held.clear()

    def assign(self, partitions: Iterable[int],
               stored: Iterable[tuple[str, bytes | dict]]) -> Output:
        """The table was recovered for `partitions`: load their runs from `stored` (key,
        value) pairs and return the outboxes still to send."""
        self._active = active = set(partitions)
        self._forget_all()
        out = Output()
        values = dict(stored)
        for key, value in values.items():
            if is_part_key(key):  # read with its run's head
                continue
            try:
                rec = RunRecord.decode(value)
                if rec.partition not in active:
                    continue
                if self._finished_with(rec) and rec.closed_at is not None:  # (the store
                    self._watch.closed(rec, rec.closed_at)  # keeps it; watched for retention)
                else:
                    self._cached(self._read(rec, values.get))
            except (ValueError, TypeError) as exc:
                log.warning("run %s: unreadable record in the table, ignored (%s)", key, exc)
                continue
            out.verdicts += [(rec.run_id, record) for record in rec.outbox]
        self.export_open_runs()
        return out

    def open_runs(self) -> Tally:
        """Runs without a final verdict, by task."""
        return self._watch.open_by_task()

    def export_open_runs(self) -> None:
        counts = self.open_runs()
        for task in set(counts) | set(self.registry.tasks()):
            self.metrics.open_runs.labels(task).set(counts.get(task, 0))
