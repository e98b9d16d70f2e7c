"""End to end: a real Prometheus (1 s scrape and rule intervals, the repo's alert rules)
scrapes a real worker on the real broker while runs with product bugs are replayed, and the
regression alert reaches `firing`."""
from __future__ import annotations

import time
from pathlib import Path

from prometheus_server import Prometheus
from streamkit import (
    Worker,
    example_events,
    interleave,
    model,
    publish_events,
    renamed,
    unique,
)

from stream.kafka.names import topic_names
from stream.kafka.processes import free_port
from stream.kafka.topics import ensure_topics


def wait_for(condition, timeout: float, what: str, *logs: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    tails = "\n".join(path.read_text(errors="replace")[-2000:] for path in logs)
    raise AssertionError(f"{what} not within {timeout} s\n{tails}")


def test_product_bug_runs_bring_the_regression_alert_to_firing(kafka, tmp_path):
    prefix = unique("alerts")
    ensure_topics(kafka.bootstrap, topic_names(prefix))
    models = tmp_path / "models"
    models.mkdir()
    model().save(models / f"{model().task}.json")
    metrics_port = free_port()
    worker = Worker(kafka.bootstrap, prefix, unique("app"), models, tmp_path / "worker.log",
                    "--metrics-port", str(metrics_port))
    prometheus = Prometheus(tmp_path, f"127.0.0.1:{metrics_port}")
    task = model().task
    failed_series = f'trustlayer_runs_total{{task="{task}",status="failed"}}'
    try:
        worker.wait_ready()
        # the worker's zero-valued series were scraped, so every failure counts as a rise
        wait_for(lambda: (prometheus.value(f"count_over_time({failed_series}[1m])") or 0) >= 2, 60,
                 "first scrapes of the worker", prometheus.log_path, worker.log)
        product_bugs = [run for run in example_events()
                        if run[0]["run_id"] in ("jl-save-textfile-test-11",
                                                "jl-save-textfile-test-16")]
        runs = [renamed(run, f"{prefix}-{k}-{run[0]['run_id']}") for k in range(3)
                for run in product_bugs]
        publish_events(kafka.bootstrap, f"{prefix}.events", interleave(runs))
        wait_for(lambda: (prometheus.value(
            f'sum(trustlayer_failure_causes_total{{task="{task}",cause="product_bug"}})') or 0)
            >= len(runs), 120, "the worker's product_bug failures", worker.log)
        # the two alerts' rules are evaluated in turn, one may fire a cycle after the other
        wanted = {"ProductBugFailuresRising", "TaskFailureRateAboveBaseline"}
        wait_for(lambda: wanted <= prometheus.firing(), 60, f"{sorted(wanted)} firing",
                 prometheus.log_path, worker.log)
        assert wanted <= prometheus.firing()
    finally:
        prometheus.stop()
        worker.stop()
