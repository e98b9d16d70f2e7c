"""Runs that go silent (their runner or the broker went away, or the product hung): at
risk past a learned deadline, judged by their next event as the file validator would, and
without one ended incomplete with cause stream_fault, never a product bug."""
from __future__ import annotations

import re

from streamkit import as_records, batch_verdicts, example_events, finals, processor

from stream.judging.processor import StreamProcessor
from stream.judging.records import DictStore


def silent_verdicts(p: StreamProcessor, start: float, **tick):
    """The timer's verdicts of `p`, ticked every second from `start` until a final one."""
    for wall in range(int(start), int(start) + 3600):
        for verdict in p.silence.tick(float(wall), **tick).verdicts:
            yield verdict
            if verdict[1]["final"]:
                return


def test_a_silent_run_past_its_deadline_is_at_risk_and_its_next_event_decides():
    events = list(example_events()[0])
    run_id = events[0]["run_id"]
    p = processor(clock=lambda: 5000.0)
    p.process_batch(as_records(events[:3], pub=5000.0))
    rid, warned = next(silent_verdicts(p, 5000.0))
    assert rid == run_id and warned["status"] == "at_risk" and not warned["final"]
    assert re.search(r"^no event for \d+ s after seq 2: .*(not reached within|lasted) \d+ s",
                     warned["reason"]) and warned["cause"] is None
    # the rest of the run comes late (a replayed spool, a broker back): judged as the file
    rest = p.process_batch(as_records(events[3:], start_offset=3, pub=9000.0)).verdicts
    [final] = finals(rest)[run_id]
    expected = batch_verdicts()[run_id]
    assert (final["verdict"], final["reason"], final["cause"]) == \
        (expected["verdict"], expected["reason"], expected["cause"])


def test_a_run_that_stays_silent_ends_incomplete_and_its_verdict_waits_in_the_outbox():
    events = list(example_events()[0])
    run_id = events[0]["run_id"]
    store = DictStore()
    p = processor(store, clock=lambda: 5000.0)
    p.process_batch(as_records(events[:3], pub=5000.0))
    assert not list(silent_verdicts(p, 5000.0, caught_up=lambda partition: False))  # behind
    *_, (rid, record) = silent_verdicts(p, 5000.0)
    assert rid == run_id and record["status"] == "incomplete" and record["final"]
    assert record["cause"] == "stream_fault"  # nobody's fault, never a product bug
    assert "not reached within" in record["reason"] or "lasted" in record["reason"]
    p.runs.flush()
    # a restarted worker sends the outbox again until it is confirmed
    restarted = processor(store)
    assert (run_id, record) in restarted.assign({0}, store.items()).verdicts
    p.runs.confirm(run_id, [v for _, v in restarted.assign({0}, store.items()).verdicts])
    p.runs.flush()
    assert processor(store).assign({0}, store.items()).verdicts == []
    # the rest of the run changes nothing
    assert not finals(p.process_batch(as_records(events[3:], start_offset=3)).verdicts)
