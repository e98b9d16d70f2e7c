"""The runner library is total: messages, read-only hints, the agent's release and `meta=`
on every method; arguments JSON has no form for are converted as documented (Decimal,
dates, sets, bytes, NaN) or refused with the field named before a `seq` is used, so a run
never breaks in the middle and no bare NaN is ever written."""
from __future__ import annotations

import asyncio
import enum
import json
import threading
import uuid
from datetime import date, datetime, timezone
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy
import pytest

from trustlayer.errors import TraceError
from trustlayer.observe.traces import read_run
from trustlayer.runner import AsyncRun, Run, TraceDir


def strict_lines(path: Path) -> list[dict]:
    """The events of `path` as a strict JSON reader takes them (no NaN, no Infinity)."""
    def refuse(constant: str) -> None:
        raise AssertionError(f"bare {constant} written")
    return [json.loads(line, parse_constant=refuse) for line in path.read_text().splitlines()]


def test_messages_read_only_hints_release_and_meta_on_every_method(tmp_path):
    with Run("support", TraceDir(tmp_path), "r", meta={"fleet": "eu"},
             agent_version="3.2") as run:
        run.state(text="Cancel order 42", meta={"channel": "chat"})
        run.action("tool", "get_order", "42", {"order_id": "42"}, read_only=True,
                   meta={"call": 1})
        run.state(text='{"status": "open"}')
        run.action("tool", "cancel_order", "42", read_only=False)
        run.action("tool", "think", "plan")
        run.message("Order 42 is cancelled.", meta={"tokens": 7})
        run.end("success", meta={"cost": 0.01})
    events = read_run(tmp_path / "r.jsonl").events
    assert [e.meta["agent_version"] for e in events] == ["3.2"] * 7
    assert all(e.meta["fleet"] == "eu" for e in events)
    assert [e.meta.get(k) for e, k in zip(events, ("channel", "call", "", "", "", "tokens",
                                                   "cost"), strict=True) if k] == [
        "chat", 1, 7, 0.01]
    tools = [e.action for e in events if e.action and e.action.type == "tool"]
    assert [t.read_only for t in tools] == [True, False, None]
    assert "read_only" not in events[4].raw["action"]  # written only when given
    said = events[5].action
    assert (said.type, said.target, said.value) == ("message", "user",
                                                    "Order 42 is cancelled.")


def test_async_runs_take_the_same_keywords(tmp_path):
    async def record() -> None:
        async with AsyncRun("t", TraceDir(tmp_path), "r", agent_version="1.0") as run:
            await run.state(text="hi", meta={"a": 1})
            await run.action("tool", "search", "x", read_only=True, meta={"b": 2})
            await run.message("found it", to="customer", meta={"c": 3})
            await run.end("success", meta={"d": 4})

    asyncio.run(record())
    events = read_run(tmp_path / "r.jsonl").events
    assert [sorted(set(e.meta) - {"traceparent"}) for e in events] == [
        ["a", "agent_version"], ["agent_version", "b"], ["agent_version", "c"],
        ["agent_version", "d"]]
    assert events[1].action.read_only is True
    assert (events[2].action.type, events[2].action.target) == ("message", "customer")


class Cabin(enum.Enum):
    ECONOMY = "economy"


def test_arguments_without_a_json_form_are_converted_as_documented(tmp_path):
    when = datetime(2026, 12, 4, 10, 30, tzinfo=timezone.utc)
    ident = uuid.UUID(int=7)
    args = {"price": Decimal("12.50"), "day": date(2026, 12, 5), "at": when,
            "seats": {"12C", "12A"}, "frozen": frozenset({3, 1}), "pair": (1, 2),
            "note": b"caf\xc3\xa9", "blob": b"\xff\x00", "ratio": float("nan"),
            "cap": float("inf"), "floor": Decimal("-Infinity"), "cabin": Cabin.ECONOMY,
            "id": ident, "by_number": {1: "one"}, "path": Path("a/b.txt"),
            "count": numpy.int64(3), "share": numpy.float32(0.5), "half": Fraction(1, 2),
            "lost": numpy.float64("nan")}
    with Run("t", TraceDir(tmp_path), "r") as run:
        run.action("tool", "book", args=args, meta={"total": Decimal("3.1"),
                                                    "seen": {"x"}})
        run.state(text="booked", a11y={"rows": [float("-inf")]})
    first, second, _ = strict_lines(tmp_path / "r.jsonl")
    assert first["action"]["args"] == {
        "price": "12.50", "day": "2026-12-05", "at": "2026-12-04T10:30:00+00:00",
        "seats": ["12A", "12C"], "frozen": [1, 3], "pair": [1, 2], "note": "café",
        "blob": "data:application/octet-stream;base64,/wA=", "ratio": "NaN",
        "cap": "Infinity", "floor": "-Infinity", "cabin": "economy", "id": str(ident),
        "by_number": {"1": "one"}, "path": "a/b.txt", "count": 3, "share": 0.5,
        "half": 0.5, "lost": "NaN"}
    assert {k: v for k, v in first["meta"].items() if k != "traceparent"} == {
        "total": "3.1", "seen": ["x"]}
    assert second["observation"]["a11y"] == {"rows": ["-Infinity"]}
    assert [e.seq for e in read_run(tmp_path / "r.jsonl").events] == [0, 1, 2]


def circular() -> dict:
    loop: dict = {}
    loop["self"] = loop
    return loop


@pytest.mark.parametrize(("record", "field"), [
    (lambda run: run.action("tool", "lock", args={"lock": threading.Lock()}),
     "field 'action.args.lock': lock has no JSON form"),
    (lambda run: run.state(text="x", meta={"where": object()}),
     "field 'meta.where': object has no JSON form"),
    (lambda run: run.action("tool", "t", args={(1, 2): "pair"}),
     "field 'action.args' has a key of type tuple"),
    (lambda run: run.action("tool", "t", args=circular()),
     "field 'action.args.self.self"),
    (lambda run: run.message("hi", meta={"items": [1, {2, object()}]}),
     "field 'meta.items[1][]': object has no JSON form"),
])
def test_a_value_without_json_form_is_refused_before_its_seq(tmp_path, record, field):
    with Run("t", TraceDir(tmp_path), "r") as run:
        run.state(text="start")
        with pytest.raises(TraceError) as refused:
            record(run)
        message = str(refused.value)
        assert message.startswith("run r event 1: ") and field in message
        assert "\n" not in message
        run.action("click", "OK")  # the refused event used no seq
        run.end("success")
    assert [e.seq for e in read_run(tmp_path / "r.jsonl").events] == [0, 1, 2]


def test_a_trace_directory_never_writes_a_bare_nan(tmp_path):
    event = {"v": 1, "run_id": "r", "task": "t", "seq": 0, "ts": 1.0, "kind": "state",
             "observation": {"text": "x", "score": float("nan")}}
    with pytest.raises(ValueError, match="not JSON compliant"):
        TraceDir(tmp_path).write(event)
    assert not (tmp_path / "r.jsonl").exists()
