"""What the streaming worker is told: how it treats runs (:class:`WorkerSettings`, all the
Kafka-free :class:`~stream.processor.StreamProcessor` needs) and everything else
``trustlayer worker`` takes (:class:`WorkerConfig`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from stream.topics import TopicNames, finished_topic


@dataclass
class WorkerSettings:
    """How the worker treats runs (model thresholds live in each model's settings).

    images_dir : screenshots given by path are read from here only (None: data URIs only).
    reorder_window : events held at most while waiting for a missing one.
    max_held_bytes : bytes of held events at most (inline screenshots are large).
    reorder_timeout : seconds a missing event is waited for once a later one came.
    deadlines : let the timer fail silent runs on the learned deadlines.
    refine : hand successful finished runs to online refinement: runs whose ``end`` a known
        runner attested (:mod:`stream.attest`).
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


#: The worker's cyclic garbage collector thresholds (Python's default: 700, 10, 10). Judging
#: an event allocates thousands of short-lived containers while models and run records stay:
#: at the default the collector ran every few events and scanned what stayed, 9% of the
#: processor's time, with pauses up to 0.2 s (each a latency spike for every run waiting).
GC_THRESHOLDS = (50_000, 20, 20)


@dataclass
class WorkerConfig:
    """Everything ``trustlayer worker`` is told (see ``trustlayer worker --help``)."""

    bootstrap: str = "127.0.0.1:9092"
    app_id: str = "trustlayer-worker"
    topics: TopicNames = field(default_factory=TopicNames)
    partitions: int = 4
    models_dir: Path | None = None
    train_dirs: list[Path] = field(default_factory=list)
    settings: WorkerSettings = field(default_factory=WorkerSettings)
    drop_after: int | None = None
    metrics_port: int = 9108
    metrics_addr: str = "127.0.0.1"
    session_timeout: float = 10.0
    heartbeat_interval: float = 1.0
    commit_interval: float = 1.0
    tick_interval: float = 1.0
    stall_seconds: float = 5.0
    stall_restart: float = 30.0
    instance_id: str | None = None
    batch_max: int = 500
    fetch_buffer_bytes: int = 64 * 1024 * 1024
    standby_replicas: int = 1

    @property
    def finished_topic(self) -> str:
        return finished_topic(self.app_id)
