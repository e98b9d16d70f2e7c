"""Finished runs stay for ``retention`` (a late duplicate of their events is recognised),
then the timer forgets them, here and in the store; one whose timer verdict is not yet
known delivered stays until it is. The timer looks only at open runs and at the finished
ones whose time is up (benchmarks/retained_runs.py measures that its tick does not grow
with the finished runs kept). A run finished with is kept in the store alone: a late
duplicate of its events reads it back."""
from __future__ import annotations

from streamkit import as_records, example_events, finals, processor, renamed

from stream.judging.records import DictStore

RETENTION = 3600.0


def test_a_finished_run_is_forgotten_once_its_retention_passed_and_not_before():
    store = DictStore()
    p = processor(store, retention=RETENTION)
    first = renamed(example_events()[0], "first")
    second = renamed(example_events()[1], "second")
    p.process_batch(as_records(first, pub=1000.0))
    p.process_batch(as_records(second, start_offset=len(first), pub=2000.0))
    p.runs.flush()
    assert p.runs.record("first").final and p.runs.record("second").final
    p.silence.tick(1000.0 + RETENTION - 1)
    assert {"first", "second"} <= set(store)
    p.silence.tick(1000.0 + RETENTION + 1)  # the first run's time is up, not the second's
    assert "first" not in store and "second" in store
    assert [rec.run_id for rec in p.runs.records()] == ["second"]
    p.silence.tick(2000.0 + RETENTION + 1)
    assert dict(store) == {} and p.runs.records() == []
    # its id may start a run again
    again = p.process_batch(as_records(first, start_offset=100, pub=9000.0))
    assert again.dlq == [] and finals(again.verdicts)["first"]


def test_a_finished_run_whose_timer_verdict_was_not_delivered_stays_until_it_is():
    store = DictStore()
    p = processor(store, retention=RETENTION, clock=lambda: 5000.0)
    events = renamed(example_events()[0], "silent")
    p.process_batch(as_records(events[:3], pub=5000.0))
    wall, made = 5000.0, []
    while not any(record["final"] for _, record in made):  # the run ends incomplete
        wall += 1
        made += p.silence.tick(wall).verdicts
    p.runs.flush()
    rec = p.runs.record("silent")
    assert rec.final and rec.outbox
    p.silence.tick(rec.closed_at + RETENTION + 1)
    assert "silent" in store  # its verdict may still have to be sent again
    p.runs.confirm("silent", rec.outbox)
    p.silence.tick(rec.closed_at + RETENTION + 2)
    assert "silent" not in store and p.runs.records() == []


def test_a_run_final_before_its_end_is_kept_from_its_end():
    """A run failed for good mid-run (too long) closes then, and again when its end comes:
    its retention counts from the end."""
    store = DictStore()
    p = processor(store, retention=RETENTION, max_run_events=10)
    events = renamed(example_events()[1], "long")
    p.process_batch(as_records(events[:12], pub=1000.0))
    assert p.runs.record("long").final and p.runs.record("long").closed_at == 1000.0
    p.process_batch(as_records(events[12:], start_offset=12, pub=1500.0))
    p.runs.flush()
    assert p.runs.record("long").closed_at == 1500.0
    p.silence.tick(1000.0 + RETENTION + 1)
    assert "long" in store
    p.silence.tick(1500.0 + RETENTION + 1)
    assert "long" not in store


def test_a_finished_run_is_let_go_to_the_store_and_read_back_for_a_late_duplicate():
    store = DictStore()
    p = processor(store, retention=RETENTION)
    events = renamed(example_events()[0], "done")
    p.process_batch(as_records(events, pub=1000.0))
    p.runs.flush()
    assert p.runs.records() == [] and "done" in store
    same = p.process_batch(as_records(events[2:3], start_offset=len(events), pub=1500.0))
    assert same.dlq == [] and same.verdicts == []  # a repeat of the event: ignored
    other = {**events[2], "ts": events[2]["ts"] + 1}
    changed = p.process_batch(as_records([other], start_offset=len(events) + 1, pub=1500.0))
    assert [letter["reason"] for _, letter in changed.dlq] == ["conflicting_duplicate"]
    p.runs.flush()
    p.silence.tick(1500.0 + RETENTION + 1)  # (the duplicate closed it again)
    assert "done" not in store and p.runs.records() == []
