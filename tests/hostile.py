"""Hostile inputs for the command line: mutated trace files and tampered model files, and a
way to run ``trustlayer`` in-process that tells a clear error from a traceback; mutated
stream records (:func:`mutate_record`) for the worker.

Used by the fuzz tests (a few hundred cases) and, run as a script, for the big counts::

    .venv/bin/python tests/hostile.py traces 1000
    .venv/bin/python tests/hostile.py models 300
    .venv/bin/python tests/hostile.py learn 50
"""
from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import random
import shutil
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trustlayer import cli

# Values an attacker or a broken runner puts in a field.
HOSTILE_VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, -(10 ** 400), 10 ** 400, 1e308, -1e308, 0.5, "", " ",
    "\u2028", "\x00", "\ud800", "é" * 3, "x" * 10_000, [], {}, [None], {"": None},
    {"role": "x", "children": [[[]]]}, "data:image/png;base64,AAAA", "../../etc/passwd",
    "/etc/passwd", "data:image/png;base64,!!!", float("nan"), float("inf"))


def nested(depth: int) -> str:
    """JSON text of lists nested `depth` deep."""
    return "[" * depth + "]" * depth


def _mutate_value(event: dict, rng: random.Random) -> None:
    """Replace, drop or add one field somewhere in the event."""
    holders = [event] + [v for v in event.values() if isinstance(v, dict)] * 3
    holder = rng.choice(holders)
    keys = list(holder) or ["x"]
    key = rng.choice(keys + ["extra", "text", "a11y", "title", "files", "outcome"])
    choice = rng.random()
    if choice < 0.15:
        holder.pop(key, None)
    else:
        holder[key] = copy.deepcopy(rng.choice(HOSTILE_VALUES))


HOSTILE_TEXT = ("\u2028", "a\u2028b\u2029c\x85d", "\ud800", "\x00\x1b[2J", "é" * 3, "x" * 20_000,
                "<script>alert(1)</script>", "\ufeff", "  ", "9" * 400, "Error: ✗ 💥")


def _vary_text(event: dict, rng: random.Random) -> None:
    """Keep the event valid but fill a text field with odd content."""
    observation = event.get("observation")
    if isinstance(observation, dict):
        field_name = rng.choice(["text", "title", "label", "url", "a11y", "unknown_field"])
        value = rng.choice(HOSTILE_TEXT)
        observation[field_name] = {"role": value, "name": value, "children": [{"role": value}]} \
            if field_name == "a11y" and rng.random() < 0.5 else value
    else:
        event["meta"] = {"note": rng.choice(HOSTILE_TEXT), "deep": json.loads(nested(20))}


def _event(line: str) -> dict | None:
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) else None


def _dump(event: dict, rng: random.Random) -> str:
    return json.dumps(event, ensure_ascii=rng.random() < 0.5, allow_nan=True)


def mutate_trace(text: str, rng: random.Random, gentle: bool = False) -> bytes:
    """One to three mutations of a trace file's text: a field made hostile, a line dropped,
    duplicated, swapped or cut, JSON nested deep, raw bytes flipped or inserted; `gentle`:
    only odd but valid text in a field."""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        if not lines:
            lines = [""]
        at = rng.randrange(len(lines))
        action = 10 if gentle else rng.randrange(16)
        if action >= 10 or action <= 3:
            event = _event(lines[at])
            if event is not None:
                (_vary_text if action >= 10 else _mutate_value)(event, rng)
                lines[at] = _dump(event, rng)
        elif action == 4:
            del lines[at]
        elif action == 5:
            lines.insert(at, lines[at])
        elif action == 6:
            other = rng.randrange(len(lines))
            lines[at], lines[other] = lines[other], lines[at]
        elif action == 7:
            lines[at] = lines[at][: rng.randrange(len(lines[at]) + 1)]
        elif action == 8:
            depth = rng.choice([50, 1_000, 100_000])
            deep = f'"observation": {{"deep": {nested(depth)}, '
            lines[at] = lines[at].replace('"observation": {', deep, 1) \
                if rng.random() < 0.5 else nested(depth)
        else:
            raw = bytearray("\n".join(lines).encode("utf-8", "surrogatepass"))
            for _ in range(rng.randint(1, 8)):
                if raw:
                    raw[rng.randrange(len(raw))] = rng.randrange(256)
            return bytes(raw)
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


def mutate_record(event: dict, rng: random.Random) -> bytes:
    """One stream record's value made from `event` by the mutations of :func:`mutate_trace`
    (a field made hostile, the record cut, emptied or doubled, nested deep, bytes flipped)."""
    return mutate_trace(json.dumps(event), rng).rstrip(b"\n")


def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside nested JSON (dict keys and list indices)."""
    found = [prefix]
    if isinstance(data, dict):
        for key, value in data.items():
            found += _paths(value, prefix + (key,))
    elif isinstance(data, list):
        for index, value in enumerate(data[:5]):
            found += _paths(value, prefix + (index,))
    return found


def tamper_model(data: dict, rng: random.Random) -> dict:
    """A model's JSON with one value somewhere replaced: hostile values, negative numbers,
    a state id that names no state, a field dropped."""
    data = copy.deepcopy(data)
    paths = [p for p in _paths(data) if p]
    path = rng.choice(paths)
    holder = data
    for step in path[:-1]:
        holder = holder[step]
    last = path[-1]
    value = holder[last]
    choice = rng.random()
    if choice < 0.15 and isinstance(holder, dict):
        del holder[last]
    elif choice < 0.35 and isinstance(value, (int, float)) and not isinstance(value, bool):
        holder[last] = -abs(value) - 1
    elif choice < 0.55 and isinstance(value, str):
        holder[last] = rng.choice(["s999", "", "zz", value + "x"])
    else:
        holder[last] = copy.deepcopy(rng.choice(HOSTILE_VALUES))
    return data


@dataclass
class Outcome:
    """What one in-process ``trustlayer`` call did."""

    code: int
    stderr: str
    traceback: str | None


def run_cli(argv: list[str]) -> Outcome:
    """Run ``trustlayer ARGV`` in this process; an exception escaping ``main`` is a
    traceback (what a user would see), reported rather than raised."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # strict, as a pipe is
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException:  # noqa: BLE001 - the very thing this counts
            return Outcome(-1, _text(err), traceback.format_exc())
    return Outcome(code, _text(err), None)


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode("utf-8")


def fuzz(count: int, seed: int, case: Callable[[random.Random, int], Outcome]) -> dict[str, Any]:
    """Run `count` cases; count exit codes and tracebacks (keeping the first few)."""
    rng = random.Random(seed)
    codes: dict[int, int] = {}
    tracebacks: list[str] = []
    for number in range(count):
        outcome = case(rng, number)
        codes[outcome.code] = codes.get(outcome.code, 0) + 1
        if outcome.traceback:
            tracebacks.append(outcome.traceback)
    kinds: dict[str, int] = {}
    for text in tracebacks:
        last = text.strip().splitlines()[-1][:100]
        kinds[last] = kinds.get(last, 0) + 1
    return {"cases": count, "codes": codes, "tracebacks": len(tracebacks), "kinds": kinds,
            "first": tracebacks[:3]}


def trace_case(model: Path, source: Path, work: Path) -> Callable[[random.Random, int], Outcome]:
    """A case: a mutated copy of one of `source`'s traces (written into `work`, beside a
    copy of its screenshots), validated against `model`."""
    traces = sorted(source.glob("*.jsonl"))
    if (source / "shots").is_dir() and not (work / "shots").exists():
        shutil.copytree(source / "shots", work / "shots")

    def case(rng: random.Random, number: int) -> Outcome:
        original = rng.choice(traces)
        path = work / f"case{number}-{original.name}"
        path.write_bytes(mutate_trace(original.read_text(), rng))
        return run_cli(["-q", "validate", str(model), str(path)])
    return case


def learn_case(source: Path, work: Path) -> Callable[[random.Random, int], Outcome]:
    """A case: `source`'s traces with one mutated, and sometimes its labels.json, learned."""
    traces = sorted(source.glob("*.jsonl"))

    def case(rng: random.Random, number: int) -> Outcome:
        folder = work / f"learn{number}"
        shutil.copytree(source, folder, copy_function=os.link)
        victim = folder / rng.choice(traces).name
        victim.unlink()  # a hard link: write a new file, not through it into `source`
        victim.write_bytes(mutate_trace((source / victim.name).read_text(), rng,
                                        gentle=rng.random() < 0.5))
        labels = folder / "labels.json"
        if labels.exists() and rng.random() < 0.3:
            text = labels.read_text()
            labels.unlink()
            labels.write_bytes(mutate_trace(text, rng))
        outcome = run_cli(["-q", "learn", str(folder), "-o", str(folder / "model.json")])
        shutil.rmtree(folder)
        return outcome
    return case


def model_case(model: Path, runs: Path, work: Path) -> Callable[[random.Random, int], Outcome]:
    """A case: a tampered copy of `model` used to validate `runs`."""
    data = json.loads(model.read_text())

    def case(rng: random.Random, number: int) -> Outcome:
        path = work / f"model{number}.json"
        if rng.random() < 0.25:  # the file's text itself: cut, bytes flipped, nested deep
            path.write_bytes(mutate_trace(json.dumps(data), rng))
        else:
            path.write_text(json.dumps(tamper_model(data, rng), allow_nan=True))
        return run_cli(["-q", "validate", str(path), str(runs)])
    return case


def main(argv: list[str]) -> int:
    import tempfile

    kind, count = argv[0], int(argv[1])
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = work / "model.json"
        assert run_cli(["-q", "learn", str(root / "examples/jupyter/train"), "-o",
                        str(model)]).code == 0
        test = root / "examples/jupyter/test"
        case = {"traces": lambda: trace_case(model, test, work),
                "learn": lambda: learn_case(root / "examples/jupyter/train", work),
                "models": lambda: model_case(model, test, work)}[kind]()
        result = fuzz(count, 2026, case)
    for text in result.pop("first"):
        print(text, file=sys.stderr)
    print(json.dumps(result))
    return 1 if result["tracebacks"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
