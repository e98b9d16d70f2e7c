"""The service's names and its default address, without a Kafka client: the topics, the
worker's tables, the broker the commands talk to by default. (The commands read their
defaults here at start, where importing aiokafka would cost time.)"""
from __future__ import annotations

from dataclasses import astuple, dataclass

#: The port of the embedded broker and the commands' default ``--broker``.
DEFAULT_PORT = 9092
DEFAULT_BROKER = f"127.0.0.1:{DEFAULT_PORT}"


@dataclass(frozen=True)
class TopicNames:
    events: str = "trustlayer.events"
    verdicts: str = "trustlayer.verdicts"
    models: str = "trustlayer.models"
    dlq: str = "trustlayer.events.dlq"

    def all(self) -> tuple[str, ...]:
        return astuple(self)


#: The worker's tables (Faust keeps each in a changelog topic ``<app_id>-<table>-changelog``).
RUNS_TABLE, TRAINING_TABLE = "runs", "training"


def finished_topic(app_id: str) -> str:
    """The topic of finished successful runs that online refinement reads."""
    return f"{app_id}-finished-runs"


def topic_names(prefix: str = "trustlayer") -> TopicNames:
    """The four topic names under `prefix` (``trustlayer`` gives the defaults)."""
    return TopicNames(f"{prefix}.events", f"{prefix}.verdicts", f"{prefix}.models",
                      f"{prefix}.events.dlq")
