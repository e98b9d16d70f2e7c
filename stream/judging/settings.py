"""How the streaming worker treats runs: all the Kafka-free
:class:`~stream.judging.processor.StreamProcessor` needs."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class WorkerSettings:
    """How the worker treats runs (model thresholds live in each model's settings).

    images_dir : screenshots given by path are read from here only (None: data URIs only).
    reorder_window : events held at most while waiting for a missing one.
    max_held_bytes : bytes of held events at most (inline screenshots are large).
    reorder_timeout : seconds a missing event is waited for once a later one came.
    deadlines : let the timer fail silent runs on the learned deadlines.
    refine : hand successful finished runs to online refinement: runs whose ``end`` a known
        runner attested (:mod:`stream.models.attest`).
    refine_on_verdict : also runs without a known outcome that the validator passed.
    runner_keys : the runners whose attested outcomes are trusted, and their keys.
    end_silence : seconds without events after which a run without its end is finalised as
        ``incomplete`` (None: from its model's learned durations, at least 30 s).
    shadow_runs : runs a refined version on trial in shadow judges before it is promoted.
    decode_budget : seconds a screenshot may take to decode (off the event loop) before its
        event ends its run with cause ``stream_fault``.
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
    runner_keys: dict[str, bytes] = field(default_factory=dict)
    end_silence: float | None = None
    shadow_runs: int = 20
    decode_budget: float = 5.0
    retention: float = 3600.0
    max_run_events: int = 20_000
    max_history_bytes: int = 1_000_000
