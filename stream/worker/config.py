"""Everything ``trustlayer worker`` is told (:class:`WorkerConfig`); how it treats runs is
:class:`~stream.judging.settings.WorkerSettings`."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from stream.judging.settings import WorkerSettings
from stream.kafka.names import DEFAULT_BROKER, TopicNames, finished_topic

#: The worker's cyclic garbage collector thresholds (Python's default: 700, 10, 10). Judging
#: an event allocates thousands of short-lived containers while models and run records stay:
#: at the default the collector ran every few events and scanned what stayed, a share of
#: the processor's time and a latency spike for every run waiting (docs/benchmarks.md).
GC_THRESHOLDS = (50_000, 20, 20)


@dataclass
class WorkerConfig:
    """Everything ``trustlayer worker`` is told (see ``trustlayer worker --help``)."""

    bootstrap: str = DEFAULT_BROKER
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
