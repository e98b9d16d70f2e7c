"""Stream faults without a broker: an event the judge cannot use, a ``(run_id, seq)``
repeated with other content and a second run under a used ``run_id`` each go to the dead
letters, and the run's verdict is final with cause ``stream_fault`` (never the agent's or
the product's); keys must be the run_id in valid UTF-8 exactly."""
from __future__ import annotations

import hashlib
import json

import pytest
from brokenimages import BREAKAGES, BROKEN_SEQ, broken_run
from streamkit import as_records, batch_verdicts, example_events, finals, model, processor, renamed

from stream.commands.replay import read_events
from stream.judging.records import DictStore, Output, Source
from stream.models.attest import canonical
from trustlayer.judge.matcher import judge_run
from trustlayer.observe.traces import read_run

PASSING, FAILING = "jl-save-textfile-test-05", "jl-save-textfile-test-11"


def events_of(run_id: str, new_id: str) -> list[dict]:
    [run] = [run for run in example_events() if run[0]["run_id"] == run_id]
    return renamed(run, new_id)


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_an_undecodable_screenshot_ends_the_run_as_the_batch_validator_does(tmp_path, breakage):
    broken_run(tmp_path, BREAKAGES[breakage], "broken")
    [events] = read_events([tmp_path])
    out = processor().process_batch(as_records(events))
    [final] = finals(out.verdicts)["broken"]
    batch = judge_run(model(), read_run(tmp_path / "run.jsonl"))
    assert (final["verdict"], final["cause"]) == ("fail", "stream_fault")
    assert (batch.verdict, batch.cause) == ("fail", "stream_fault")
    assert final["reason"].startswith(f"event seq {BROKEN_SEQ} cannot be judged: screenshot "
                                      "data URI does not decode")
    assert batch.reason.startswith(f"event seq {BROKEN_SEQ} cannot be judged: screenshot ")
    assert [(key, record["reason"], record["offset"]) for key, record in out.dlq] == \
        [(b"broken", "bad_image", BROKEN_SEQ)]
    assert out.finished == []  # never learned from


def test_a_conflicting_duplicate_before_the_original_makes_the_verdict_a_stream_fault():
    events = events_of(PASSING, "dup")
    forged = {**events[3], "ts": events[3]["ts"] + 1, "action": {"type": "key", "value": "Escape"}}
    sent = [*events[:3], forged, *events[3:]]
    out = processor().process_batch(as_records(sent))
    [final] = finals(out.verdicts)["dup"]
    assert (final["verdict"], final["cause"]) == ("fail", "stream_fault")
    assert "seq 3 of run 'dup' repeated with other content" in final["reason"]
    assert [record["reason"] for _, record in out.dlq] == ["conflicting_duplicate"]
    assert json.loads(out.dlq[0][1]["value"])["seq"] == 3


def test_an_exact_duplicate_is_ignored():
    events = events_of(PASSING, "same")
    out = processor().process_batch(as_records([*events[:4], events[3], *events[4:], events[0]]))
    [final] = finals(out.verdicts)["same"]
    assert final["verdict"] == batch_verdicts()[PASSING]["verdict"] == "pass"
    assert out.dlq == []


def test_a_second_run_under_a_used_run_id_goes_to_the_dead_letters():
    first, second = events_of(PASSING, "reused"), events_of(FAILING, "reused")
    out = processor().process_batch(as_records([*first, *second]))
    [final] = finals(out.verdicts)["reused"]  # the first run's verdict, final before
    assert final["verdict"] == "pass"
    reasons = [record["reason"] for _, record in out.dlq]
    assert reasons[0] == "run_id_reused" and "a second run under the used run_id 'reused'" in \
        out.dlq[0][1]["error"]
    assert len(reasons) == len(second) and set(reasons[1:]) <= {"conflicting_duplicate",
                                                                 "after_end"}


def test_a_second_run_interleaved_with_the_first_fails_it_as_a_stream_fault():
    first, second = events_of(PASSING, "mixed"), events_of(FAILING, "mixed")
    out = processor().process_batch(as_records([*first[:4], second[0], *first[4:]]))
    [final] = finals(out.verdicts)["mixed"]
    assert (final["verdict"], final["cause"]) == ("fail", "stream_fault")
    assert [record["reason"] for _, record in out.dlq] == ["run_id_reused"]


def test_a_key_must_be_the_run_id_in_valid_utf8_exactly():
    event = {**events_of(PASSING, "k\ufffd")[0]}
    value = json.dumps(event).encode()
    proc = processor()
    out = Output()
    for offset, key in enumerate((b"k\xff", b"k\xfe", "k\ufffd".encode())):
        proc.process(key, value, Source(0, offset, 1.0), out)
    assert [record["reason"] for _, record in out.dlq] == ["wrong_key", "wrong_key"]
    # only the exact key started the run
    assert [rec.run_id for rec in proc.runs.records()] == ["k\ufffd"]


def test_a_record_written_before_the_digest_changed_still_knows_its_events():
    """A record in the changelog holds the BLAKE2b digests of the workers before
    ``event_digest`` became SHA-256: a repeat of its event is still ignored, other content
    still refused."""
    store = DictStore()
    events = events_of(PASSING, "upgraded")
    first = processor(store)
    first.process_batch(as_records(events[:5]))
    first.runs.flush()
    record = json.loads(store["upgraded"])
    record["digests"] = [hashlib.blake2b(canonical(e), digest_size=8).hexdigest()
                         for e in events[:5]]
    store["upgraded"] = json.dumps(record).encode()
    again = processor(store)
    assert again.process_batch(as_records([events[3]], start_offset=5)).dlq == []
    other = {**events[3], "action": {"type": "key", "value": "Escape"}}
    out = again.process_batch(as_records([other], start_offset=6))
    assert [letter["reason"] for _, letter in out.dlq] == ["conflicting_duplicate"]
