"""Hostile records on the events topic, without a broker: every one goes to the DLQ with a
clear reason or is judged as an event, other runs lose nothing, and a final verdict is
never changed (events after a run's end go to the DLQ as ``after_end``)."""
from __future__ import annotations

import json
import random
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamkit import (
    TEST,
    as_records,
    batch_verdicts,
    example_events,
    finals,
    interleave,
    model,
    processor,
    renamed,
)

from stream.commands.replay import read_events
from stream.deadletter import REASONS, Rejected, dead_letter
from stream.judging.events import decode_event
from stream.judging.records import Source
from stream.kafka.clients import MAX_MESSAGE_BYTES
from trustlayer.observe.json_fit import MAX_NESTING, json_problem

TASK = model().task


def event(run_id: str, **fields) -> dict:
    return {"v": 1, "run_id": run_id, "task": TASK, "seq": 0, "ts": 1.0, "kind": "state",
            "observation": {"text": "hello"}, **fields}


def raw(run_id: str, text: str) -> tuple[bytes, bytes]:
    return run_id.encode(), text.encode("utf-8", "surrogatepass")


def poison() -> list[tuple[bytes | None, bytes | None, str]]:
    """(key, value, expected DLQ reason) of records that must never stop the worker."""
    base = json.dumps(event("p"))
    cases = [
        (*raw("p1", base.replace('"ts": 1.0', '"ts": ' + "9" * 400)), "wrong_schema"),
        (*raw("p2", base.replace('"ts": 1.0', '"ts": ' + "9" * 5000)), "malformed_json"),
        (*raw("p3", base.replace('"ts": 1.0', '"ts": NaN')), "wrong_schema"),
        (*raw("p4", base.replace('"ts": 1.0', '"ts": 1e400')), "wrong_schema"),
        (*raw("p5", base.replace('"seq": 0', '"seq": -' + "9" * 400)), "wrong_schema"),
        (*raw("p6", "[" * 10_000 + "]" * 10_000), "too_deep"),
        (*raw("p7", base.replace('"text": "hello"', '"deep": ' + "[" * 10_000 + "]" * 10_000)),
         "too_deep"),
        (*raw("p8", base.replace('"text": "hello"', '"deep": ' + "[" * 300 + "]" * 300)),
         "too_deep"),
        (b"p9", b'{"v": 1, "run_id": "p9", \xff\xfe "seq": 0}', "malformed_json"),
        (b"p10", b"", "malformed_json"),
        (b"p11", None, "malformed_json"),
        (*raw("p12", "[1, 2]"), "wrong_schema"),
        (*raw("p13", '"an event"'), "wrong_schema"),
        (*raw("p14", "null"), "wrong_schema"),
        (*raw("p15", "12345"), "wrong_schema"),
        (*raw("p16", base.replace('"hello"', '"\\ud800"')), "wrong_schema"),
        (*raw("p17", base.replace('"kind": "state"', '"kind": "' + "k" * 2_000_000 + '"')),
         "wrong_schema"),
        (b"k" * 100_000, base.replace('"p"', '"p18"').encode(), "wrong_key"),
        (None, base.encode(), "wrong_key"),
        (*raw("p20", base.replace('"v": 1', '"v": true')), "wrong_schema"),
        (*raw("p", base.replace(TASK, "no-such-task")), "no_model"),
    ]
    return [(k, v, reason) for k, v, reason in cases]


def test_poison_records_go_to_the_dlq_and_every_good_run_is_judged():
    runs = [renamed(run, f"good-{run[0]['run_id']}") for run in example_events()]
    good = [(e["run_id"].encode(), json.dumps(e).encode()) for e in interleave(runs)]
    bad = poison()
    rng = random.Random(10)
    mixed = list(good)
    for key, value, _ in bad:
        mixed.insert(rng.randrange(len(mixed) + 1), (key, value))
    records = [(k, v, Source(0, offset, 1000.0)) for offset, (k, v) in enumerate(mixed)]
    out = processor().process_batch(records)
    expected = {json.dumps([k.decode("utf-8", "replace")[:50] if k else None, reason])
                for k, _, reason in bad}
    got = {json.dumps([(r["key"] or None) and r["key"][:50], r["reason"]]) for _, r in out.dlq}
    assert got == expected
    assert len(out.dlq) == len(bad)
    for _, record in out.dlq:
        assert record["error"].startswith("trustlayer.events[0]@") and len(record["error"]) < 2100
        assert len(json.dumps(record)) < 8 * 1024 * 1024
    final = finals(out.verdicts)
    for rid, expected_record in batch_verdicts().items():
        [got_record] = final[f"good-{rid}"]
        assert (got_record["verdict"], got_record["reason"]) == \
            (expected_record["verdict"], expected_record["reason"])
    assert set(final) == {f"good-{rid}" for rid in batch_verdicts()}


def test_events_after_the_end_go_to_the_dlq_and_the_verdict_stays():
    run = list(example_events()[0])
    end = run[-1]
    assert end["kind"] == "end"
    other = "failure" if end["outcome"] == "success" else "success"
    late = [{**end, "seq": end["seq"] + 1, "outcome": other},
            {**run[1], "seq": end["seq"] + 2},
            {**end, "seq": end["seq"] + 5}]
    p = processor()
    first = p.process_batch(as_records(run))
    [verdict] = finals(first.verdicts)[end["run_id"]]
    out = p.process_batch(as_records(late, start_offset=len(run)))
    assert out.verdicts == []
    assert [r["reason"] for _, r in out.dlq] == ["after_end"] * 3
    assert "ended before seq" in out.dlq[0][1]["error"]
    p.runs.flush()  # what the checkpoint does
    record = json.loads(p.store[end["run_id"]])
    assert record["final"] and record["ended"] and record["last_key"] == \
        [verdict["status"], True, verdict["coverage"]]


def test_events_held_beyond_the_end_go_to_the_dlq_when_the_end_is_fed():
    run = list(example_events()[1])
    end = run[-1]
    after = {**end, "seq": end["seq"] + 1, "outcome": "failure"}
    order = run[:-2] + [end, after, run[-2]]  # the end and one after it come early
    out = processor().process_batch(as_records(order))
    assert [r["reason"] for _, r in out.dlq] == ["after_end"]
    assert json.loads(out.dlq[0][1]["value"])["seq"] == after["seq"]
    [verdict] = finals(out.verdicts)[end["run_id"]]
    assert verdict["verdict"] == batch_verdicts()[end["run_id"]]["verdict"]


class Models:
    def latest(self, task):
        return model() if task == TASK else None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.one_of(st.none(), st.binary(max_size=40)),
       value=st.one_of(st.none(), st.binary(max_size=400),
                       st.builds(lambda e: json.dumps(e).encode(), st.recursive(
                           st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                           lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
                           max_leaves=30)),
                       st.builds(lambda d: ("[" * d + "]" * d).encode(),
                                 st.integers(150, 20_000))))
def test_any_record_decodes_to_an_event_or_a_clear_dlq_reason(key, value):
    try:
        decoded = decode_event(key, value, "t[0]@1", Models())
    except Rejected as exc:
        assert exc.reason in REASONS and exc.message.startswith("t[0]@1")
        record = dead_letter(key, value, Source(0, 1, 1.0), exc.reason, exc.message)
        json.dumps(record)  # the DLQ record is JSON
    else:
        assert decoded.event.run_id == key.decode()


def test_replay_keeps_a_raw_line_separator_inside_a_string(tmp_path):
    source = sorted(TEST.glob("*.jsonl"))[0]
    events = [json.loads(line) for line in source.read_text().split("\n") if line.strip()]
    state = next(e for e in events if e["kind"] == "state")
    state["observation"]["text"] = "first\u2028second\u2029third\x85fourth"
    trace = tmp_path / source.name
    trace.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events),
                     encoding="utf-8")
    assert "\u2028" in trace.read_text(encoding="utf-8")  # raw, not escaped
    shutil.copytree(TEST / "shots", tmp_path / "shots")
    [run] = read_events([trace], "path")
    assert len(run) == len(events)
    assert run[state["seq"]]["observation"]["text"] == "first\u2028second\u2029third\x85fourth"


@pytest.mark.parametrize("size", [6_000_000, MAX_MESSAGE_BYTES])
def test_a_run_whose_record_would_outgrow_the_table_fails_and_stays_failed(size):
    """A screen of one 6 MB word, or as long as an event may be: its history (the word)
    would not fit the changelog with the rest of the run's record."""
    run = list(example_events()[2])
    at = next(e["seq"] for e in run if e["kind"] == "state")
    giant = {**run[at], "observation": {"text": ""}}
    text = "x" * min(size, MAX_MESSAGE_BYTES - len(json.dumps(giant)) - 200)
    giant["observation"]["text"] = text
    assert len(json.dumps(giant)) <= MAX_MESSAGE_BYTES  # the events topic takes it
    p = processor()
    out = p.process_batch(as_records(run[:at] + [giant]))
    [final] = finals(out.verdicts)[run[0]["run_id"]]
    assert final["verdict"] == "fail" and final["reason"].startswith("run too long")
    p.runs.flush()
    assert len(p.store[run[0]["run_id"]]) < MAX_MESSAGE_BYTES
    rest = p.process_batch(as_records(run[at + 1:], start_offset=at + 1))
    assert rest.verdicts == [] and rest.dlq == []


@pytest.mark.parametrize("depth", [MAX_NESTING - 3, MAX_NESTING - 2, MAX_NESTING - 1,
                                   MAX_NESTING])
@pytest.mark.parametrize("inner", ["", "1", "\"\\ud800\""])
def test_an_event_nested_near_the_limit_is_refused_as_the_full_check_refuses_it(depth, inner):
    """The reader takes what orjson read for fit when it holds few brackets: the outcome is
    the one of json_fit's walk of the event, whichever JSON reader read it."""
    meta = json.loads("[" * depth + inner + "]" * depth)  # in the event: one level deeper
    value = json.dumps(event("deep", meta={"nested": meta})).encode()
    problem = json_problem(json.loads(value))
    try:
        decode_event(b"deep", value, "t[0]@1", Models())
    except Rejected as exc:
        assert problem is not None and exc.reason == problem.code
    else:
        assert problem is None
