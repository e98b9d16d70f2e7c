"""Verdicts in a terminal: following a topic's JSON records as they arrive, and one
verdict as one line (``trustlayer verdicts``, the demo)."""
from __future__ import annotations

import json
from typing import Any

from stream.kafka import clients
from trustlayer.show.escape import printable


def verdict_line(record: dict[str, Any]) -> str:
    """One verdict as a terminal line.

    >>> verdict_line({"run_id": "r1", "status": "failed", "final": True, "model_version": 2,
    ...               "coverage": 0.5, "reason": "x", "cause": "product_bug",
    ...               "detected_at_seq": 7})
    'r1  FAILED  v2  coverage 50%  at seq 7  product_bug: x'
    """
    status = record["status"].upper() if record.get("final") else record["status"]
    cause = f"{record['cause']}: " if record.get("cause") else ""
    seq = "" if record.get("detected_at_seq") is None else f"  at seq {record['detected_at_seq']}"
    return printable(f"{record['run_id']}  {status}  v{record['model_version']}  coverage "
                     f"{record['coverage']:.0%}{seq}  {cause}{record.get('reason') or ''}"
                     ).rstrip()


async def follow(bootstrap: str, topic: str, from_beginning: bool = True, group: str | None = None):
    """Yield the JSON values of `topic` as they arrive."""
    consumer = clients.consumer(bootstrap, topic, group=group,
                              auto_offset_reset="earliest" if from_beginning else "latest")
    await consumer.start()
    try:
        async for message in consumer:
            try:
                yield json.loads(message.value)
            except ValueError:
                continue
    finally:
        await consumer.stop()
