"""The worker's two Faust tables and the store over each: ``runs`` (one record per open or
recently finished run, :class:`~stream.judging.records.RunRecord`) and ``training`` (the runs
online refinement merged or holds back), each with a compacted changelog
``<app_id>-<table>-changelog``."""
from __future__ import annotations

import asyncio
from typing import Any

import faust
from faust.types import TableT

from stream.kafka.clients import MAX_MESSAGE_BYTES
from stream.kafka.names import RUNS_TABLE, TRAINING_TABLE
from stream.worker.config import WorkerConfig


def declare_tables(app: faust.App, cfg: WorkerConfig) -> tuple[TableT, TableT]:
    """The ``runs`` and ``training`` tables of `app` (keys text, values raw bytes)."""
    big = {"max.message.bytes": str(MAX_MESSAGE_BYTES)}
    schema: faust.Schema = faust.Schema(key_type=str, value_type=bytes, key_serializer="raw",
                                        value_serializer="raw")
    runs, training = (app.Table(name, partitions=cfg.partitions, schema=schema,
                                extra_topic_configs=big)
                      for name in (RUNS_TABLE, TRAINING_TABLE))
    return runs, training


class TableStore:
    """The :class:`~stream.judging.records.Store` over a Faust table: local data plus an explicit
    changelog record to the run's own partition (the judge takes fetches past Faust's
    streams, so there is no current event for Faust to take the partition from)."""

    def __init__(self, table: Any):
        self.table = table
        self.inflight: set[asyncio.Future] = set()

    def get(self, key: str) -> bytes | None:
        return self.table.data.get(key)

    def put(self, key: str, partition: int, value: bytes | None) -> None:
        if value is None:
            self.table.data.pop(key, None)
        else:
            self.table.data[key] = value
        future = self.table.send_changelog(partition, key, value)
        self.inflight.add(future)
        future.add_done_callback(self.inflight.discard)

    def items(self) -> list[tuple[str, bytes | dict]]:
        """Every (key, value); a value recovered from the changelog may come back decoded."""
        return [(k, v) for k, v in list(self.table.data.items()) if v is not None]

    async def settled(self) -> None:
        """Wait until every changelog record written so far is delivered."""
        await asyncio.gather(*self.inflight)
