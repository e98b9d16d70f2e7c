"""A long run's record is written in parts (stream.judging.parts): what a checkpoint writes
holds only what came since the last part, a worker that reads the run again gets it whole,
and a finished run leaves the store with all its parts."""
from __future__ import annotations

import json
import logging

from streamkit import as_records, interleave, long_run, processor

from stream.judging.parts import head_key, is_part_key, part_key
from stream.judging.records import DictStore
from stream.judging.runbook import RunBook
from trustlayer.judge.resume import snapshot

PART = 16


def judged_in_parts(store: DictStore, *runs: list[dict]):
    """A processor writing in parts of PART events, fed `runs` (interleaved) a record at a
    time, each run written after each of its records."""
    judge = processor(store, refine=False)
    judge.runs.part_events = PART
    for record in as_records(interleave(list(runs))):
        judge.process_batch([record])
        judge.runs.flush()
        head = json.loads(store[head_key(record[0].decode())])
        rows = head["snapshot"]["history"] if head["snapshot"] else ()  # None once ended
        assert len(head["digests"]) < PART and len(rows) < PART
    return judge


def read_again(store: DictStore, run_id: str, judged: RunBook) -> None:
    """A new worker reads the run from `store` whole, as `judged` holds it: when one of its
    events comes (its record alone) and after a rebalance (every record in the store)."""
    held = judged.record(run_id)
    looked_up, assigned = processor(store).runs, processor(store).runs
    assigned.assign([0], store.items())
    assert run_id in {rec.run_id for rec in assigned.records()}
    for book in (looked_up, assigned):
        rec = book.record(run_id)
        assert rec is not None and held is not None
        assert (rec.digests, rec.offsets) == (held.digests, held.offsets)
        assert snapshot(book.matcher(rec)) == snapshot(judged.matcher(held))


def test_a_long_run_is_written_in_parts_and_read_back_whole():
    store = DictStore()
    judge = judged_in_parts(store, long_run("long", 10 * PART + 5))
    assert judge.runs.record("long").parts == 10
    assert sum(map(is_part_key, store)) == 10
    read_again(store, "long", judge.runs)


def test_an_early_event_repeated_after_a_restart_is_compared_with_its_sealed_digest():
    store = DictStore()
    events = long_run("long", 4 * PART)
    judged_in_parts(store, events)
    again = processor(store)
    repeat = as_records([events[3]], start_offset=len(events))
    assert again.process_batch(repeat).dlq == []  # the same event: ignored
    other = {**events[3], "action": {"type": "click", "target": "elsewhere"}}
    out = again.process_batch(as_records([other], start_offset=len(events) + 1))
    assert [letter["reason"] for _, letter in out.dlq] == ["conflicting_duplicate"]


def test_a_finished_run_leaves_the_store_with_its_parts():
    store = DictStore()
    judge = judged_in_parts(store, long_run("long", 3 * PART, end=True))
    judge.silence.tick(wall=judge.runs.record("long").closed_at + 2 * 3600)
    assert dict(store) == {}


def test_a_run_whose_id_is_the_key_of_another_runs_part_keeps_its_own_record():
    store = DictStore()
    named_like_a_part = part_key("long", 0)
    judge = judged_in_parts(store, long_run("long", 3 * PART), long_run(named_like_a_part,
                                                                        3 * PART))
    read_again(store, "long", judge.runs)
    read_again(store, named_like_a_part, judge.runs)


def test_a_run_missing_a_part_is_left_out_with_a_warning(caplog):
    store = DictStore()
    judged_in_parts(store, long_run("long", 3 * PART), long_run("other", 3 * PART))
    del store[part_key("long", 1)]
    book = processor(store).runs
    with caplog.at_level(logging.WARNING):
        book.assign([0], store.items())
    assert book.record("other") is not None and "long" not in {r.run_id for r in book.records()}
    assert "run 'long': part 1 of 3 is missing" in caplog.text
