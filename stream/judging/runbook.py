"""The runs one worker holds: their records cached over the store, their matchers, and what
a rebalance does to them.

A run's :class:`~stream.judging.records.RunRecord` is read from the store when one of its events
first comes and then kept in memory; :meth:`RunBook.flush` writes the runs changed since
they were last written, once however many of their events came meanwhile. A run's
:class:`~trustlayer.judge.matcher.Matcher` is restored from the record's snapshot, on the
model version the run started with (the newest one if that version is unknown here).
"""
from __future__ import annotations

import logging
from collections import Counter as Tally
from collections.abc import Iterable

from stream.judging.metrics import Metrics
from stream.judging.records import Output, RunRecord, Store
from stream.models.registry import ModelRegistry
from trustlayer.compare.llm import LLMJudge, judge_for
from trustlayer.judge.matcher import Matcher
from trustlayer.judge.resume import restore, snapshot
from trustlayer.model import Model

log = logging.getLogger(__name__)


class RunBook:
    """The runs of the partitions assigned to this worker (``active``; None until the first
    assignment), their matchers and which of them changed since they were written."""

    def __init__(self, registry: ModelRegistry, store: Store, metrics: Metrics):
        self.registry, self.store, self.metrics = registry, store, metrics
        self.cache: dict[str, RunRecord] = {}
        self.matchers: dict[str, Matcher] = {}
        self.dirty: set[str] = set()
        self.active: set[int] | None = None
        self._judges: dict[tuple[str, int], LLMJudge | None] = {}

    def record(self, run_id: str) -> RunRecord | None:
        """The run's record: cached, else read from the store (None for a new run)."""
        rec = self.cache.get(run_id)
        if rec is None:
            value = self.store.get(run_id)
            if value is not None:
                rec = self.cache[run_id] = RunRecord.decode(value)
        return rec

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
        matcher = self.matchers.get(rec.run_id)
        if matcher is None:
            model = self.model(rec)
            matcher = (restore(model, rec.snapshot, self._judge(model))
                       if rec.snapshot else Matcher(model, self._judge(model)))
            self.matchers[rec.run_id] = matcher
        return matcher

    def _judge(self, model: Model) -> LLMJudge | None:
        key = (model.task, model.version)
        if key not in self._judges:
            self._judges[key] = judge_for(model.settings.llm)
        return self._judges[key]

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
                rec.snapshot = snapshot(matcher)
            self.store.put(run_id, rec.partition, rec.encode())

    def delivered(self, verdicts: Iterable[tuple[str, dict]]) -> None:
        """These verdicts reached the broker: their runs need not send them again when
        their records come again after a restart."""
        for run_id, record in verdicts:
            rec = self.cache.get(run_id)
            if rec is not None and rec.sent:
                rec.sent = [item for item in rec.sent if item["record"] is not record]

    def forget(self, rec: RunRecord) -> None:
        """Drop the run, here and in the store."""
        self.cache.pop(rec.run_id, None)
        self.matchers.pop(rec.run_id, None)
        self.dirty.discard(rec.run_id)
        self.store.put(rec.run_id, rec.partition, None)

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
        self.export_open_runs()
        return out

    def open_runs(self) -> Tally:
        """Runs without a final verdict, by task."""
        return Tally(rec.task for rec in self.cache.values() if not rec.final)

    def export_open_runs(self) -> None:
        counts = self.open_runs()
        for task in set(counts) | set(self.registry.tasks()):
            self.metrics.open_runs.labels(task).set(counts.get(task, 0))
