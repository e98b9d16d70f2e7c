"""Metrics by agent release: a run's ``meta.agent_version`` labels its final verdict, the
newest few releases per task keep their own label (ranked newest first), older ones are
counted as ``older``, runs without one as ``unknown``."""
from __future__ import annotations

from streamkit import as_records, batch_verdicts, example_events, model, renamed

from stream.judging.metrics import Metrics
from stream.judging.processor import StreamProcessor
from stream.judging.records import DictStore
from stream.judging.releases import natural_key
from stream.models.registry import ModelRegistry

RUNS = "trustlayer_release_runs_total"


def released(events, run_id: str, release: str | None) -> list[dict]:
    """The run under `run_id`, its first event naming `release`."""
    events = renamed(events, run_id)
    if release is not None:
        events[0] = {**events[0], "meta": {**(events[0].get("meta") or {}),
                                           "agent_version": release}}
    return events


def judged(releases: list[str | None], kept: int = 3) -> Metrics:
    """A processor fed each example run once per release given."""
    registry = ModelRegistry()
    registry.add(model())
    metrics = Metrics(releases_kept=kept)
    proc = StreamProcessor(registry, DictStore(), metrics=metrics)
    events = [event for number, release in enumerate(releases)
              for k, run in enumerate(example_events())
              for event in released(run, f"r{number}-{k}", release)]
    proc.process_batch(as_records(events))
    return metrics


def sample(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_final_verdicts_are_counted_by_release_and_status():
    metrics = judged(["3.1", "3.2"])
    failed = sum(v["verdict"] == "fail" for v in batch_verdicts().values())
    passed = len(batch_verdicts()) - failed
    task = model().task
    for release in ("3.1", "3.2"):
        assert sample(metrics, RUNS, task=task, release=release, status="failed") == failed
        assert sample(metrics, RUNS, task=task, release=release, status="passed") == passed
    assert sample(metrics, "trustlayer_release_rank", task=task, release="3.2") == 1
    assert sample(metrics, "trustlayer_release_rank", task=task, release="3.1") == 2


def test_cardinality_is_bounded_older_and_unknown_releases_share_a_label():
    metrics = judged(["1.9", "1.10", "2.0", None, "1.8"], kept=2)
    task = model().task
    labels = {s.labels["release"] for family in metrics.registry.collect()
              if family.name == RUNS.removesuffix("_total") for s in family.samples}
    assert labels == {"2.0", "1.10", "older", "unknown"}  # 1.9 dropped when 2.0 came
    runs = len(batch_verdicts())
    assert sum(sample(metrics, RUNS, task=task, release="older", status=status) or 0
               for status in ("passed", "failed")) == runs  # 1.8, older than both kept
    assert sample(metrics, "trustlayer_release_rank", task=task, release="1.9") is None


def test_releases_rank_in_natural_order():
    assert max(["3.9", "3.10", "3.9.1"], key=natural_key) == "3.10"
