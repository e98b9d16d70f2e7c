"""The timer looks at an open run when one of its events came or when the time it was given
comes, not at every tick: its verdicts are those of a timer that looks at every open run at
every tick, under runs that finish, go silent, miss an event or come slowly, on partitions
that fall behind or lose the broker now and then."""
from __future__ import annotations

import json
import random

import pytest
from streamkit import example_events, processor, renamed

from stream.judging.records import Source

START, TICKS = 5000, 1500


def planned(seed: int) -> list[tuple[float, int, dict]]:
    """(wall time, partition, event) of a dozen runs, by wall time."""
    rng, runs, plan = random.Random(seed), example_events(), []
    for number in range(12):
        events = renamed(runs[number % len(runs)], f"r{seed}-{number}")
        fate = rng.choice(("whole", "silent", "gap", "slow"))
        if fate == "silent":
            events = events[:rng.randint(1, len(events) - 2)]
        elif fate == "gap":  # (fewer events after it than the reorder window holds)
            del events[rng.randint(len(events) - 4, len(events) - 2)]
        wall = START + rng.uniform(0, 300)
        for event in events:
            wall += rng.expovariate(1 / (40 if fate == "slow" else 3))
            plan.append((wall, number % 2, event))
    return sorted(plan, key=lambda item: item[0])


def verdicts(seed: int, every_run_every_tick: bool, reorder_timeout: float
             ) -> list[tuple[str, dict]]:
    """What a processor sends, fed the plan of `seed` and ticked every second."""
    plan, now = planned(seed), [float(START)]
    judge = processor(clock=lambda: now[0], reorder_timeout=reorder_timeout)
    weather = random.Random(seed + 1)  # when each partition is behind or away
    offsets, sent, k = [0, 0], [], 0
    for wall in range(START, START + TICKS):
        now[0] = float(wall)
        batch = []
        while k < len(plan) and plan[k][0] <= wall:
            _, partition, event = plan[k]
            batch.append((event["run_id"].encode(), json.dumps(event).encode(),
                          Source(partition, offsets[partition], plan[k][0])))
            offsets[partition] += 1
            k += 1
        sent += judge.process_batch(batch).verdicts
        behind = {p for p in (0, 1) if weather.random() < 0.05}
        away = {p for p in (0, 1) if weather.random() < 0.003}
        if every_run_every_tick:
            judge.runs.look_again()
        sent += judge.silence.tick(float(wall), caught_up=lambda p, b=behind: p not in b,
                                   fetched=lambda p, a=away: p not in a).verdicts
    return sent


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("reorder_timeout", [30.0, 400.0])  # (a run waiting for an event
def test_the_timer_sends_what_looking_at_every_run_every_tick_sends(seed, reorder_timeout):
    looked_at_when_due = verdicts(seed, False, reorder_timeout)  # may go silent meanwhile)
    assert looked_at_when_due == verdicts(seed, True, reorder_timeout)
    reasons = " ".join(record["reason"] or "" for _, record in looked_at_when_due)
    statuses = {record["status"] for _, record in looked_at_when_due}
    assert {"at_risk", "incomplete"} <= statuses
    assert ("did not come within" in reasons) == (reorder_timeout < 60)


def test_a_run_waiting_for_a_missing_event_still_ends_incomplete_when_silent():
    """A run whose event went missing is waited for up to ``reorder_timeout``, and its
    silence counts meanwhile: past its end silence it ends ``incomplete`` first."""
    events = renamed(example_events()[0], "gap")
    judge = processor(clock=lambda: float(START), reorder_timeout=400.0, end_silence=60.0)
    judge.process_batch([(e["run_id"].encode(), json.dumps(e).encode(), Source(0, k, START))
                         for k, e in enumerate(events[:3] + events[4:6])])
    sent = [v for wall in range(START, START + 100) for v in judge.silence.tick(wall).verdicts]
    assert [(record["status"], record["final"]) for _, record in sent][-1] == \
        ("incomplete", True)
    assert "no end event for 61 s after seq 2" in sent[-1][1]["reason"]


def test_the_runs_of_a_partition_behind_wait_for_it_not_for_each_tick():
    """While a partition is behind its backlog its quiet runs are not looked at at each
    tick (a tick would cost every open run of it): an event of theirs brings one back,
    and the partition's catching up brings them all."""
    judge = processor(clock=lambda: float(START))

    def records(events: list[dict], first: int) -> list[tuple[bytes, bytes, Source]]:
        return [(e["run_id"].encode(), json.dumps(e).encode(), Source(0, first + n, START))
                for n, e in enumerate(events)]

    def due() -> list[str]:
        return [rec.run_id for rec in judge.runs.due(START + 1.0)]

    runs = [renamed(example_events()[k][:4], f"w{k}") for k in range(3)]
    judge.process_batch(records([e for run in runs for e in run[:3]], 0))
    judge.silence.tick(float(START), caught_up=lambda partition: False)
    assert due() == []
    judge.process_batch(records(runs[1][3:], 9))
    assert due() == ["w1"]
    judge.runs.unpark(waiting={1})  # (what a tick does once partition 0 has caught up)
    assert due() == ["w0", "w1", "w2"]
