"""The worker's Prometheus metrics: names as deploy/prometheus/alerts.yml and the Grafana
dashboard read them, every series started at 0 so that rate() sees the first change."""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from stream.deadletter import REASONS
from stream.judging.releases import Releases
from trustlayer.judge.status import FAILED, Status
from trustlayer.model import Model
from trustlayer.observe.trace_events import EVENT_KINDS

RELEASE_STATUSES = ("passed", "failed", "incomplete")


class Metrics:
    """The worker's Prometheus metrics; the names are those of deploy/prometheus/alerts.yml
    and the Grafana dashboard."""

    LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

    def __init__(self, registry: CollectorRegistry | None = None, releases_kept: int = 3):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.events = Counter("trustlayer_events_total", "Events processed, by task and kind",
                              ["task", "kind"], registry=r)
        self.runs = Counter("trustlayer_runs_total", "Runs with a final verdict, by task and "
                            "status (passed|failed|incomplete: its events stopped, cause "
                            "stream_fault)", ["task", "status"], registry=r)
        self.failures = Counter("trustlayer_failures_total", "Failed runs by task and first "
                                "missing milestone", ["task", "missing"], registry=r)
        self.causes = Counter("trustlayer_failure_causes_total", "Failed runs by task and cause",
                              ["task", "cause"], registry=r)
        self.unknown = Counter("trustlayer_unknown_states_total", "States matching no model "
                               "state, by task", ["task"], registry=r)
        self.dlq = Counter("trustlayer_dlq_records_total", "Events sent to the dead-letter "
                           "topic, by reason", ["reason"], registry=r)
        self.latency = Histogram("trustlayer_verdict_latency_seconds", "From an event's publish "
                                 "time to the verdict it caused", ["task"],
                                 buckets=self.LATENCY_BUCKETS, registry=r)
        self.open_runs = Gauge("trustlayer_open_runs", "Runs without a final verdict on this "
                               "worker, by task", ["task"], registry=r)
        self.model_version = Gauge("trustlayer_model_version", "Newest model version, by task",
                                   ["task"], registry=r)
        self.stalls = Counter("trustlayer_stalls_total", "Partitions whose records stopped "
                              "coming, by what the worker did (resumed: resumed and sought "
                              "back; restarted: the worker started again)", ["action"],
                              registry=r)
        self.fetch_pauses = Counter("trustlayer_fetch_pauses_total", "Times fetching paused "
                                    "because the events waiting to be judged passed the fetch "
                                    "buffer (--fetch-buffer; the worker is behind)", registry=r)
        self.shadow_runs = Counter("trustlayer_shadow_runs_total", "Runs judged by both the "
                                   "model in use and a refined version on trial in shadow, by "
                                   "task", ["task"], registry=r)
        self.shadow_disagreements = Counter(
            "trustlayer_shadow_disagreements_total", "Runs whose final verdict by the version "
            "in shadow differs from the version in use, by task and both verdicts",
            ["task", "used", "shadow"], registry=r)
        self.release_runs = Counter(
            "trustlayer_release_runs_total", "Runs with a final verdict, by task, agent release "
            "(meta.agent_version: the newest few per task, then 'older'; 'unknown' without "
            "one) and status", ["task", "release", "status"], registry=r)
        self.release_rank = Gauge("trustlayer_release_rank", "The agent releases labelled, by "
                                  "task: 1 the newest, 2 its predecessor...",
                                  ["task", "release"], registry=r)
        self.releases = Releases(releases_kept, self._release_dropped, self._releases_ranked)
        for action in ("resumed", "restarted"):
            self.stalls.labels(action)
        for reason in REASONS:
            self.dlq.labels(reason)
        self._versions: dict[str, int] = {}

    def model_known(self, model: Model) -> None:
        """Start the task's series at 0 (so that rate() counts the first failures) and
        export its newest version."""
        task = model.task
        for status in ("passed", "failed", "incomplete"):
            self.runs.labels(task, status)
        for kind in EVENT_KINDS:  # a restarted worker that gets nothing shows rate 0
            self.events.labels(task, kind)
        for cause in ("product_bug", "agent_error"):
            self.causes.labels(task, cause)
        self.unknown.labels(task)
        self.shadow_runs.labels(task)
        for used, shadow in (("fail", "pass"), ("pass", "fail")):
            self.shadow_disagreements.labels(task, used, shadow)
        self.open_runs.labels(task)
        self._versions[task] = max(self._versions.get(task, 0), model.version)
        self.model_version.labels(task).set(self._versions[task])

    def _release_dropped(self, task: str, release: str) -> None:
        for status in RELEASE_STATUSES:
            self.release_runs.remove(task, release, status)
        self.release_rank.remove(task, release)

    def _releases_ranked(self, task: str, ranks: dict[str, int]) -> None:
        for release, rank in ranks.items():
            self.release_rank.labels(task, release).set(rank)
            for status in RELEASE_STATUSES:  # from 0, so that rate() counts the first runs
                self.release_runs.labels(task, release, status)

    def final(self, status: Status, release: object = None) -> None:
        """Count a final verdict; `release` is the run's ``meta.agent_version``."""
        self.runs.labels(status.task, status.status).inc()
        label = self.releases.label(status.task, release)
        self.release_runs.labels(status.task, label, status.status).inc()
        if status.status == FAILED:
            self.failures.labels(status.task, status.missing[0] if status.missing else "none").inc()
            self.causes.labels(status.task, status.cause or "unknown").inc()

    def serve(self, port: int, addr: str = "127.0.0.1") -> tuple[str, int]:
        """``/metrics`` over HTTP on `addr`:`port` (prometheus-client's own server thread);
        this machine only unless told otherwise. Returns the address it listens on."""
        server, _ = start_http_server(port, addr=addr, registry=self.registry)
        host, bound = server.server_address[:2]
        return str(host), int(bound)
