"""The checkpoint acknowledges events only once the runs they changed are written and the
verdicts they caused delivered (no broker: a store whose writes are settled by hand)."""
from __future__ import annotations

import asyncio

from streamkit import as_records, example_events, interleave, model

from stream.judging.processor import StreamProcessor
from stream.judging.records import DictStore
from stream.judging.settings import WorkerSettings
from stream.models.registry import ModelRegistry
from stream.worker.checkpoint import Checkpoint


class SlowStore(DictStore):
    """Writes that are delivered only when :meth:`settled` is awaited."""

    def __init__(self):
        super().__init__()
        self.writes, self.delivered = 0, 0

    def put(self, key, partition, value):
        self.writes += 1
        super().put(key, partition, value)

    async def settled(self):
        await asyncio.sleep(0)
        self.delivered = self.writes


class Acks(list):
    """The events acknowledged, each checked to be acknowledged after the writes settled."""

    def __init__(self, store: SlowStore):
        super().__init__()
        self.store = store

    def __call__(self, event):
        assert self.store.delivered == self.store.writes, "acknowledged before written"
        self.append(event)


def test_events_are_acknowledged_after_their_runs_are_written_and_verdicts_delivered():
    async def run() -> None:
        registry = ModelRegistry()
        registry.add(model())
        store = SlowStore()
        processor = StreamProcessor(registry, store, WorkerSettings(refine=False))
        acked = Acks(store)
        checkpoint = Checkpoint(processor.runs, store, acked)
        records = as_records(interleave([list(r) for r in example_events()]))
        loop = asyncio.get_running_loop()
        sends = []
        for record in records:  # one batch per record, as at a low rate
            out = processor.process_batch([record])
            sent = [loop.create_future() for _ in out.verdicts]
            sends += sent
            checkpoint.add([record[2].offset], out, sent)
        assert acked == [] and store.writes == 0
        settling = asyncio.ensure_future(checkpoint.settle())
        await asyncio.sleep(0.01)
        assert not settling.done() and acked == []  # verdicts not delivered yet
        assert store.writes == len(example_events())  # one record per run
        for future in sends:
            future.set_result(None)
        assert await settling == len(records)
        assert acked == [source.offset for *_, source in records]
        assert all(rec.sent == [] for rec in processor.runs.records())  # nothing to resend

    asyncio.run(run())
