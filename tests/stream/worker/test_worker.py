"""The worker's logic without a broker: StreamProcessor on the example runs."""
from __future__ import annotations

import asyncio
import base64
import json
import random
import re

import pytest
from prometheus_client import generate_latest
from streamkit import (
    REPO,
    RUNNER_KEYS,
    TEST,
    as_records,
    bad_records,
    batch_verdicts,
    example_events,
    finals,
    interleave,
    model,
    png,
    processor,
    renamed,
)

from stream.commands.replay import read_events
from stream.judging.processor import StreamProcessor
from stream.judging.records import DictStore, Source
from stream.judging.settings import WorkerSettings
from stream.models.attest import Signer
from stream.models.registry import ModelRegistry
from stream.worker import transport
from stream.worker.app import create_app
from stream.worker.config import WorkerConfig


def same_as_batch(final: dict[str, list[dict]], rename=lambda rid: rid) -> None:
    batch = batch_verdicts()
    assert set(final) == {rename(rid) for rid in batch}
    for rid, expected in batch.items():
        records = final[rename(rid)]
        assert len(records) == 1, records
        got = records[0]
        assert (got["verdict"], got["reason"], got["cause"]) == \
            (expected["verdict"], expected["reason"], expected["cause"]), rid
        assert got["missing"] == expected["missing"] and got["coverage"] == expected["coverage"]


def test_interleaved_runs_get_the_batch_validators_verdicts():
    p = processor()
    out = p.process_batch(as_records(interleave([list(r) for r in example_events()])))
    same_as_batch(finals(out.verdicts))
    assert not out.dlq
    assert all(r["model_version"] == model().version for _, r in out.verdicts)


def test_runs_whose_screenshots_the_runner_fingerprinted_get_the_batch_verdicts():
    runs = read_events([TEST], "fingerprint")
    states = [e["observation"] for run in runs for e in run if e["kind"] == "state"]
    assert any("screenshot_fingerprint" in o for o in states)
    assert not any("screenshot" in o for o in states)
    out = processor().process_batch(as_records(interleave(runs)))
    assert not out.dlq
    same_as_batch(finals(out.verdicts))


def test_a_verdict_only_when_the_status_or_the_coverage_changes():
    p = processor()
    out = p.process_batch(as_records(interleave([list(r) for r in example_events()])))
    for run_id in batch_verdicts():
        keys = [(r["status"], r["final"], r["coverage"]) for rid, r in out.verdicts
                if rid == run_id]
        assert keys[0][:2] == ("running", False)
        coverage = [key[2] for key in keys]
        assert coverage == sorted(coverage)  # milestones are not taken back
        assert all(a != b for a, b in zip(keys, keys[1:])), keys
        assert keys[-1][1] is True
    passed = [r for _, r in out.verdicts if r["status"] == "passed" and not r["final"]]
    assert passed and all(r["detected_at_seq"] is not None for r in passed)
    # deterministic: verdict_ts is the triggering event's ts
    assert all(r["verdict_ts"] == r["event_ts"] for _, r in out.verdicts)


def shuffled_within(events: list[dict], window: int, rng: random.Random) -> list[dict]:
    """Each run's events reordered within blocks of `window`, some sent twice."""
    out = []
    for start in range(0, len(events), window):
        block = events[start:start + window]
        rng.shuffle(block)
        out += block + [e for e in block if rng.random() < 0.3]
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_duplicates_and_reordering_within_the_window_give_the_in_order_verdicts(seed):
    rng = random.Random(seed)
    runs = [shuffled_within(list(r), 6, rng) for r in example_events()]
    p = processor(reorder_window=8)
    out = p.process_batch(as_records(interleave(runs)))
    same_as_batch(finals(out.verdicts))
    in_order = processor().process_batch(
        as_records(interleave([list(r) for r in example_events()])))

    def statuses(o):
        return sorted((rid, r["status"], r["final"], r["reason"]) for rid, r in o.verdicts)

    assert statuses(out) == statuses(in_order)


def test_events_skipped_by_the_consumer_and_read_again_later_are_judged():
    """Records the consumer dropped (a rebalance) and read again after a seek back come
    below offsets already processed: an event never processed is judged, not taken for one
    processed before a restart. Before, a run whose first events were skipped so held every
    later one and failed as missing its first event."""
    events = interleave([list(r) for r in example_events()])
    records = as_records(events)
    p = processor()
    # each run's first two events were dropped
    first = p.process_batch([r for r, e in zip(records, events) if e["seq"] >= 2])
    assert not finals(first.verdicts)
    out = p.process_batch(records)  # sought back: all of them again
    same_as_batch(finals(first.verdicts + out.verdicts))
    again = p.process_batch(records)  # and once more (a restart): nothing new is judged
    assert finals(again.verdicts) == finals(out.verdicts)


def test_a_gap_longer_than_the_window_fails_the_run_with_events_missing():
    events = list(example_events()[0])
    p = processor(reorder_window=3)
    out = p.process_batch(as_records(events[:2] + events[3:8]))
    [final] = finals(out.verdicts)[events[0]["run_id"]]
    assert final["status"] == "failed" and final["verdict"] == "fail"
    assert final["reason"].startswith("events missing: seq 2 did not come before 4 later events")
    assert final["detected_at_seq"] == 1
    # the late event and the rest change nothing
    more = p.process_batch(as_records(events[2:3] + events[8:], start_offset=100))
    assert not more.verdicts


def test_a_missing_event_not_come_within_the_timeout_fails_the_run():
    events = list(example_events()[0])
    clock = [1000.0]
    p = processor(reorder_timeout=5.0, clock=lambda: clock[0])
    p.process_batch(as_records(events[:4] + events[5:7], pub=1000.0))
    assert not p.silence.tick(1000.0).verdicts  # the worker's timer runs from then on
    assert not p.silence.tick(1004.0).verdicts
    out = p.silence.tick(1006.0)
    [(run_id, record)] = out.verdicts
    assert record["final"] and record["reason"] == "events missing: seq 4 did not come within 5 s"
    assert p.runs.record(run_id).outbox == [record]
    assert p.silence.tick(1007.0).verdicts == []


def test_bad_records_go_to_the_dlq_with_their_reason_and_processing_goes_on(tmp_path):
    (tmp_path / "outside.png").write_bytes(png(4, 4))
    images = tmp_path / "images"
    images.mkdir()
    bad = bad_records(images)
    good = list(example_events()[0])
    values = [(k.encode(), v) for k, v, _ in bad]
    records = [(k, v, Source(0, i, 1.0)) for i, (k, v) in enumerate(values)]
    records += as_records(good, start_offset=len(records))
    p = processor(images_dir=images)
    out = p.process_batch(records)
    assert [r["reason"] for _, r in out.dlq] == [reason for _, _, reason in bad]
    for (_, record), (_, value, _) in zip(out.dlq, bad):
        assert record["offset"] >= 0 and record["error"]
        assert record.get("value", "").encode() == value or \
            base64.b64decode(record["value_base64"]) == value
    assert "pixels, over the limit" in out.dlq[5][1]["error"]
    assert "leaves the trace directory" in out.dlq[8][1]["error"]
    # a screenshot by reference inside the directory is fine, and the good run is judged
    ok = {"v": 1, "run_id": "ref", "task": model().task, "seq": 0, "ts": 1.0, "kind": "state",
          "observation": {"screenshot": "ok.png"}}
    more = p.process_batch(as_records([ok], start_offset=1000))
    assert not more.dlq and more.verdicts
    assert finals(out.verdicts)[good[0]["run_id"]][0]["verdict"] == \
        batch_verdicts()[good[0]["run_id"]]["verdict"]
    text = generate_latest(p.metrics.registry).decode()
    assert 'trustlayer_dlq_records_total{reason="malformed_json"} 2.0' in text
    assert 'trustlayer_dlq_records_total{reason="path_outside_dir"} 2.0' in text


@pytest.mark.parametrize("screenshot, images, reason", [
    ("data:image/png;base64,AAAA", None, "bad_image"),  # not an image
    ("data:text/plain;base64,AAAA", None, "bad_image"),
    ("shot.png", None, "path_outside_dir"),  # no image directory allowed
    ("../shot.png", "dir", "path_outside_dir"),
    ("missing.png", "dir", "image_not_found")])
def test_a_refused_screenshot_goes_to_the_dead_letters_by_the_core_code(screenshot, images,
                                                                         reason, tmp_path):
    """The dead letters' reason is the code of the core's TraceError, not its words."""
    (tmp_path / "dir").mkdir()
    state = {"v": 1, "run_id": "r", "task": "t", "seq": 0, "ts": 1.0, "kind": "state",
             "observation": {"screenshot": screenshot}}
    p = processor(images_dir=tmp_path / images if images else None)
    out = p.process_batch([(b"r", json.dumps(state).encode(), Source(0, 0, 1.0))])
    assert [r["reason"] for _, r in out.dlq] == [reason]


def test_records_processed_again_after_a_crash_send_the_same_verdicts_again():
    """At-least-once: the store has the first half, the source offsets were not committed,
    so a new processor gets every record again."""
    records = as_records(interleave([list(r) for r in example_events()]))
    store = DictStore()
    first = processor(store)
    half = len(records) // 2
    sent_before = first.process_batch(records[:half]).verdicts
    first.runs.flush()  # the runs were written, the verdicts' delivery not yet confirmed
    # crash: a new processor, the same store, every record again
    again = processor(store)
    sent_after = again.process_batch(records).verdicts
    before = {json.dumps(r, sort_keys=True) for _, r in sent_before}
    after = {json.dumps(r, sort_keys=True) for _, r in sent_after}
    assert before <= after  # what was sent before is sent again, unchanged
    every = finals(sent_before + sent_after)
    assert all(len({json.dumps(r, sort_keys=True) for r in rs}) == 1 for rs in every.values())
    same_as_batch({rid: rs[:1] for rid, rs in every.items()})
    # and once more: nothing new, the same records
    third = processor(store).process_batch(records).verdicts
    assert {json.dumps(r, sort_keys=True) for _, r in third} <= after


def test_a_worker_restarted_after_every_record_gives_the_batch_verdicts():
    """Each record goes to a new processor that resumes from the runs as last written."""
    store, sent = DictStore(), []
    for record in as_records(interleave([list(r) for r in example_events()])):
        p = processor(store)
        sent += p.process_batch([record]).verdicts
        p.runs.flush()
    same_as_batch(finals(sent))


class CountingStore(DictStore):
    def __init__(self):
        super().__init__()
        self.writes = 0

    def put(self, key, partition, value):
        self.writes += 1
        super().put(key, partition, value)


def test_a_run_is_written_once_per_flush_however_many_of_its_events_came():
    store = CountingStore()
    p = processor(store)
    runs = [list(r) for r in example_events()]
    for start in range(0, max(map(len, runs)), 10):  # ten events of each run per checkpoint
        p.process_batch(as_records(interleave([run[start:start + 10] for run in runs]),
                                   start_offset=start * 100))
        before = store.writes
        p.runs.flush()
        assert store.writes - before <= len(runs)
    assert store.writes < sum(map(len, runs)) / 3


def test_verdicts_known_delivered_are_not_sent_again_after_a_restart():
    records = as_records(interleave([list(r) for r in example_events()]))
    store = DictStore()
    first = processor(store)
    out = first.process_batch(records)
    delivered, unconfirmed = out.verdicts[::2], out.verdicts[1::2]
    first.runs.delivered(delivered)
    first.runs.flush()
    again = processor(store).process_batch(records).verdicts

    def ids(verdicts):
        return sorted(json.dumps(r, sort_keys=True) for _, r in verdicts)

    assert ids(again) == ids(unconfirmed)


def test_a_run_too_long_fails_with_that_reason_and_keeps_a_bounded_record():
    events = list(example_events()[1])
    store = DictStore()
    p = processor(store, max_run_events=10)
    records = as_records(events)
    out = p.process_batch(records[:-1])
    p.runs.flush()
    [final] = finals(out.verdicts)[events[0]["run_id"]]
    assert final["status"] == "failed" and final["detected_at_seq"] == 10
    assert final["reason"] == "run too long: more than 10 events (max_run_events)"
    rec = p.runs.record(events[0]["run_id"])
    assert rec.offsets == [] and len(rec.snapshot["history"]) < 10
    end = p.process_batch(records[-1:])
    assert not end.verdicts and not end.finished  # final, and not learned from
    # the history's size too, counted the same after a restart at every record
    by_bytes = DictStore()
    sent = []
    for record in as_records(events):
        q = processor(by_bytes, max_history_bytes=500)
        sent += q.process_batch([record]).verdicts
        q.runs.flush()
    [final] = finals(sent)[events[0]["run_id"]]
    assert final["reason"].startswith("run too long: its history passed 500 bytes at seq ")
    assert final["detected_at_seq"] < 10


def test_runs_finish_on_the_version_they_started_with():
    registry = ModelRegistry()
    registry.add(model())
    p = StreamProcessor(registry, DictStore(), WorkerSettings())
    first, second = list(example_events()[0]), renamed(example_events()[0], "later-run")
    p.process_batch(as_records(first[:5]))
    new = registry.derive(model(), "loaded")
    registry.add(new)
    out = p.process_batch(as_records(first[5:] + second, start_offset=5))
    versions = {rid: {r["model_version"] for r in rs} for rid, rs in finals(out.verdicts).items()}
    assert versions == {first[0]["run_id"]: {model().version}, "later-run": {new.version}}


def test_attested_successful_runs_go_to_refinement_unless_it_is_off():
    signer = Signer("runner-1", RUNNER_KEYS["runner-1"])
    records = as_records(interleave([[signer.sign(e) for e in r] for r in example_events()]))
    out = processor(runner_keys=RUNNER_KEYS).process_batch(records)
    outcomes = {run[-1]["run_id"]: run[-1]["outcome"] for run in example_events()}
    assert set(outcomes.values()) == {"success", "failure"}
    finished = {payload["run_id"]: payload for _, payload in out.finished}
    assert set(finished) == {rid for rid, outcome in outcomes.items() if outcome == "success"}
    assert {p["runner"] for p in finished.values()} == {"runner-1"}
    lengths = {run[0]["run_id"]: len(run) for run in example_events()}
    assert all(len(p["offsets"]) == lengths[rid] for rid, p in finished.items())
    assert not processor(refine=False, runner_keys=RUNNER_KEYS).process_batch(records).finished
    # unattested, or attested by a runner the worker does not know: not learned from
    unsigned = as_records(interleave([list(r) for r in example_events()]))
    assert not processor(runner_keys=RUNNER_KEYS).process_batch(unsigned).finished
    assert not processor(runner_keys={"runner-2": RUNNER_KEYS["runner-2"]}).process_batch(
        records).finished


def test_the_exported_metric_names_are_those_of_the_alert_rules_and_dashboard():
    p = processor()
    runs = [list(r) for r in example_events()]
    runs[0][0] = {**runs[0][0], "meta": {"agent_version": "1.0"}}  # ranks the release
    p.process_batch(as_records(interleave(runs)))
    p.silence.tick()
    text = generate_latest(p.metrics.registry).decode()
    exported = set(re.findall(r"^(trustlayer_[a-z_]+?)(?:_bucket|_sum|_count|_created)?[{ ]",
                              text, re.M))
    rules = (REPO / "deploy" / "prometheus" / "alerts.yml").read_text()
    panels = (REPO / "deploy" / "grafana" / "trustlayer-dashboard.json").read_text()
    # metric names, not recording rules (``task:trustlayer_...:increase10m``)
    used = {re.sub(r"_bucket$", "", name) for name in
            re.findall(r"(?<![:\w])trustlayer_[a-z_]+(?![:\w])", rules + panels)}
    assert {"trustlayer_runs_total", "trustlayer_failures_total", "trustlayer_open_runs",
            "trustlayer_failure_causes_total", "trustlayer_dlq_records_total",
            "trustlayer_events_total", "trustlayer_verdict_latency_seconds"} <= used
    assert used <= exported, used - exported
    task = model().task
    assert f'trustlayer_runs_total{{status="failed",task="{task}"}} 4.0' in text
    assert f'trustlayer_model_version{{task="{task}"}} {float(model().version)}' in text
    for cause in ("product_bug", "agent_error"):
        assert f'trustlayer_failure_causes_total{{cause="{cause}",task="{task}"}} 2.0' in text
    assert f'trustlayer_open_runs{{task="{task}"}} 0.0' in text


def test_the_worker_consumer_asks_the_broker_to_hold_a_fetch_briefly():
    """Faust asks 1.5 s; a fetch of only quiet partitions then kept events already on the
    broker from the worker that long (see stream.worker.transport.WORKER_FETCH_MAX_WAIT_MS)."""
    app, _ = create_app(WorkerConfig())

    async def held() -> int:  # (aiokafka makes its clients in a running loop)
        client = app.consumer._thread._create_worker_consumer(app.transport)
        await client.stop()
        return client._fetch_max_wait_ms

    assert asyncio.run(held()) == transport.WORKER_FETCH_MAX_WAIT_MS < 1500
