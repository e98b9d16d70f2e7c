"""A run's record in the table reads back as it was, whichever JSON writer wrote it: orjson
for a run whose events it read, the standard library for one with an event it could not
read (a NaN, which orjson would write as null)."""
from __future__ import annotations

import dataclasses
import json
import math

from streamkit import as_records, example_events, processor, renamed

from stream.judging.records import RunRecord


def by_the_standard_library(rec: RunRecord) -> dict:
    return json.loads(dataclasses.replace(rec, plain_numbers=False).encode())


def test_each_record_of_a_run_reads_back_as_the_standard_library_writes_it():
    judge = processor()
    for key, value, source in as_records(renamed(example_events()[0], "plain")):
        judge.process_batch([(key, value, source)])
        judge.runs.flush()
        rec = judge.runs.record("plain")
        assert rec is not None and rec.plain_numbers
        written = json.loads(judge.store["plain"])
        assert written == by_the_standard_library(rec) | {"plain_numbers": True}
    assert rec.ended


def test_an_event_held_with_a_nan_is_written_with_it():
    judge = processor()
    first, second, third = renamed(example_events()[0][:3], "nan")
    third = {**third, "meta": {**third.get("meta", {}), "score": math.nan}}
    # seq 2 comes before seq 1: it waits in the record, as the runner sent it
    judge.process_batch(as_records([first, third]))
    judge.runs.flush()
    held = RunRecord.decode(judge.store["nan"]).held["2"]
    assert math.isnan(held.event["meta"]["score"])
    assert not judge.runs.record("nan").plain_numbers
    judge.process_batch(as_records([second], start_offset=2))  # the gap fills: judged
    judge.runs.flush()
    assert RunRecord.decode(judge.store["nan"]).next_seq == 3


def test_a_record_written_before_plain_numbers_was_kept_is_not_taken_for_plain():
    old = {k: v for k, v in json.loads(RunRecord("r", "t", 1, 0).encode()).items()
           if k != "plain_numbers"}
    assert not RunRecord.decode(json.dumps(old)).plain_numbers
