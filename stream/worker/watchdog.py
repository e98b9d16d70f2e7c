"""The worker's watch over Faust's consumer: whether a partition is caught up and fetched
lately (the deadlines' conditions), partitions that stall (resumed and sought back, see
:mod:`stream.worker.stall`), an assignment made without the worker's topics, and the restart when
nothing else helps: the worker stops with :data:`~stream.worker.supervise.RESTART` and its
supervisor starts it again (the changelog keeps every open run)."""
from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import Any

from aiokafka import TopicPartition
from faust.types import TP

from stream.judging.metrics import Metrics
from stream.worker.config import WorkerConfig
from stream.worker.progress import Progress
from stream.worker.stall import RESTART, STALLED, StallGuard
from stream.worker.supervise import RESTART as EXIT_RESTART

log = logging.getLogger("trustlayer.worker")

#: Seconds without a fetch response for a partition after which the timer takes the broker
#: as away (or the worker as stuck) and counts no silence there (deadlines).
FETCH_STALE = 10.0
#: Seconds a worker whose shutdown hangs waits before it exits hard.
EXIT_AFTER = 20.0


class Watchdog:
    """Checks on Faust's consumer of `app` for the worker configured by `cfg`."""

    def __init__(self, app: Any, cfg: WorkerConfig, progress: Progress, metrics: Metrics):
        self.app, self.cfg, self.progress, self.metrics = app, cfg, progress, metrics
        self.stalls = StallGuard(cfg.stall_seconds, cfg.stall_restart)
        #: since when the consumer's metadata has lacked a topic it reads (None: it has not)
        self.missing_since: float | None = None
        #: set when the worker gives up on its consumer and stops to be started again
        self.restart = False

    def caught_up(self, partition: int) -> bool:
        """Every record of the events partition published so far has been processed."""
        tp = TopicPartition(self.cfg.topics.events, partition)
        try:
            highwater = self.app.consumer.highwater(tp)
        except Exception:  # noqa: BLE001 - no fetch yet, no assignment
            return False
        position = self.progress.next_offset(tp)
        return highwater is not None and position is not None and position >= highwater

    def fetched(self, partition: int) -> bool:
        """The consumer fetched from the events partition within :data:`FETCH_STALE`
        seconds: the broker answers, and the worker reads (aiokafka's time of its last
        fetch response, empty or not)."""
        tp = TopicPartition(self.cfg.topics.events, partition)
        try:
            stamp = self.app.consumer._thread._ensure_consumer().last_poll_timestamp(tp)
        except Exception:  # noqa: BLE001 - not assigned, not started
            return False
        return stamp is not None and time.time() - stamp / 1000 < FETCH_STALE

    def consumer_state(self, tp: TopicPartition) -> str:
        """What faust's consumer thinks of `tp` (for the log of a stall)."""
        consumer = self.app.consumer
        return (f"active={tp in consumer._get_active_partitions()} "
                f"paused={tp in consumer._paused_partitions} "
                f"buffered={tp in consumer._buffered_partitions} "
                f"flow={consumer.flow_active} recovery={self.app.in_recovery}")

    async def unstall(self) -> None:
        """Resume and seek back a partition whose records stay undelivered (see
        :mod:`stream.worker.stall`); stop the worker to be started again if that does not help.
        Processing is idempotent, so a needless seek only makes duplicates, which are
        ignored."""
        app, progress = self.app, self.progress
        now = time.monotonic()
        self.stalls.forget(set(progress.progress))
        for tp in sorted(progress.progress):
            try:
                highwater = app.consumer.highwater(tp)
            except Exception:  # noqa: BLE001 - not fetched yet
                continue
            position = progress.next_offset(tp)
            verdict = self.stalls.check(tp, now, progress.last_progress(tp, now), position,
                                        highwater)
            if verdict == RESTART:
                log.error("%s: records from offset %d still not delivered after %.0f s (%s): "
                          "restarting the worker", tp, position, self.cfg.stall_restart,
                          self.consumer_state(tp))
                self.restart_worker()
                return
            if verdict == STALLED:
                log.warning("%s: records from offset %d not delivered for %.0f s (%s); "
                            "resuming and seeking back", tp, position,
                            now - progress.progress[tp], self.consumer_state(tp))
                self.metrics.stalls.labels("resumed").inc()
                if app.consumer.flow_active and not app.in_recovery:
                    # Faust's own TP: its active set asserts that type, and crashed on ours
                    app.consumer.resume_partitions([TP(tp.topic, tp.partition)])
                await app.consumer.seek(tp, position)

    def topics_missing(self) -> bool:
        """Restart the worker if the group's assignment was made without one of its topics
        for `stall_restart` seconds: a broker that restarts answers metadata without topics
        for a moment, Faust then ignores them ("Ignoring missing topic") and only a metadata
        refresh minutes later would assign them again. Only the group's leader can tell:
        its aiokafka keeps the metadata the assignment was made from, a follower's is empty
        or stale (every follower of a fleet used to restart every 30 s)."""
        if not self.progress.assigned or not self.group_leader():
            self.missing_since = None
            return False
        now = time.monotonic()
        missing = [topic for topic in (self.cfg.topics.events, self.cfg.finished_topic)
                   if not self.app.consumer.topic_partitions(topic)]  # None or empty
        if not missing:
            self.missing_since = None
            return False
        self.missing_since = self.missing_since or now
        if now - self.missing_since >= self.cfg.stall_restart:
            log.error("the consumer's assignment has left out %s for %.0f s: restarting the "
                      "worker", ", ".join(missing), now - self.missing_since)
            self.restart_worker()
        return True

    def group_leader(self) -> bool:
        consumer = self.app.consumer._thread._consumer
        return consumer is not None and consumer._coordinator._group_subscription is not None

    def restart_worker(self) -> None:
        """Stop the worker (Faust's own shutdown commits what was processed) so that its
        supervisor starts a fresh one; if the shutdown hangs, exit hard after
        :data:`EXIT_AFTER` seconds (the changelog keeps every open run)."""
        if self.restart:
            return
        self.restart = True
        self.metrics.stalls.labels("restarted").inc()
        timer = threading.Timer(EXIT_AFTER, os._exit, (EXIT_RESTART,))
        timer.daemon = True
        timer.start()
        os.kill(os.getpid(), signal.SIGTERM)
