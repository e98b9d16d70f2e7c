"""Learned deadlines: only from enough evidence, never under the floor, and never counting
time when the worker could not see a run's events (the broker away, a worker just started)."""
from __future__ import annotations

import dataclasses

from streamkit import as_records, batch_verdicts, example_events, finals, model, processor

from trustlayer.judge.deadlines import DEADLINE_MIN_OBSERVATIONS, deadline
from trustlayer.judge.matcher import Matcher
from trustlayer.observe.event_parsing import parse_event
from trustlayer.settings import Settings

DEADLINE_FLOOR = Settings().deadline_floor


def with_timing(max_seconds: float, observations: int):
    """model() with every learned duration `max_seconds` long, seen `observations` times."""
    return dataclasses.replace(model(), timing={
        kind: {sid: {"min": 0.0, "median": max_seconds, "max": max_seconds, "n": observations}
               for sid in per_state} for kind, per_state in model().timing.items()})


def started(chosen, count: int = 3) -> Matcher:
    matcher = Matcher(chosen)
    for raw in example_events()[0][:count]:
        matcher.feed(parse_event(raw))
    return matcher


def test_a_deadline_needs_enough_evidence_and_has_a_floor():
    settings = model().settings
    assert deadline({"max": 0.3, "n": 8}, settings) == DEADLINE_FLOOR
    assert deadline({"max": 0.3, "n": 8}, Settings(deadline_floor=2.0)) == 2.0
    assert deadline({"max": 100.0, "n": DEADLINE_MIN_OBSERVATIONS}, settings) \
        == settings.deadline_factor * 100.0
    assert deadline({"max": 100.0, "n": DEADLINE_MIN_OBSERVATIONS - 1}, settings) is None
    few = started(with_timing(0.3, DEADLINE_MIN_OBSERVATIONS - 1))
    assert few.tick(few.start_ts + 1e6).status != "failed"  # no deadline at all
    quick = started(with_timing(0.3, 8))
    assert quick.tick(quick.start_ts + DEADLINE_FLOOR - 1).status != "failed"
    assert quick.tick(quick.start_ts + 1e6).status == "failed"


def test_events_a_little_slower_than_every_successful_run_do_not_fail_the_run():
    """A model whose successful runs moved every 0.3 s; a run whose events come 1.6 s apart,
    the timer ticking every 0.5 s between them, gets the batch validator's verdict."""
    run = list(example_events()[0])
    p = processor(chosen=with_timing(0.3, 8))
    verdicts = []
    for number, record in enumerate(as_records(run)):
        pub = 1000.0 + 1.6 * number
        record[2].timestamp = pub
        verdicts += p.process_batch([record]).verdicts
        for tick in (0.5, 1.0, 1.5):
            verdicts += p.silence.tick(pub + tick).verdicts
    [final] = finals(verdicts)[run[0]["run_id"]]
    assert final["verdict"] == batch_verdicts()[run[0]["run_id"]]["verdict"]
    assert "not reached within" not in final["reason"] and "lasted" not in final["reason"]


def test_time_the_broker_was_away_does_not_count_and_quiet_runs_are_not_failed_at_once():
    runs = [list(run)[:3] for run in example_events()]
    records = [r for number, run in enumerate(runs)
               for r in as_records(run, start_offset=10 * number, pub=5000.0)]
    away, always = processor(), processor()
    for p in (away, always):
        p.process_batch(records)
        assert not p.silence.tick(5000.0).verdicts
    up = lambda partition: True  # noqa: E731
    down = lambda partition: False  # noqa: E731
    for wall in range(5001, 6000, 7):  # the broker away for a thousand seconds
        assert not away.silence.tick(float(wall), fetched=down).verdicts
    back = 6000.0
    assert not away.silence.tick(back, fetched=up).verdicts
    assert not away.silence.tick(back + DEADLINE_FLOOR - 1, fetched=up).verdicts
    # a worker whose broker never went away has failed them all by then
    assert len(finals(always.silence.tick(back + DEADLINE_FLOOR - 1).verdicts)) == len(runs)
    late = finals(away.silence.tick(back + 1e5, fetched=up).verdicts)
    assert len(late) == len(runs)  # truly silent runs still fail in the end
