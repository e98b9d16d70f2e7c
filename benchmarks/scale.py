"""Judging cost against a run's length: a run of N small events (a few screens of text the
model has never seen, and the agent's clicks between them), judged by the model of
examples/jupyter. Printed: the time for 10k and 100k events and their ratio (goal <= 12:
linear, with room for the machine's noise), and the peak memory of the longer one.

    .venv/bin/python benchmarks/scale.py [--events N]
"""
from __future__ import annotations

import argparse
import time
import tracemalloc
from pathlib import Path

from trustlayer.judge.matcher import Matcher
from trustlayer.learn.learner import learn
from trustlayer.observe.event_parsing import parse_event
from trustlayer.observe.traces import read_runs

REPO = Path(__file__).resolve().parents[1]


def events(count: int):
    """`count` events of one run: a state, then a click, over and over (8 screens)."""
    yield parse_event({"v": 1, "run_id": "long", "task": "jl-save-textfile", "seq": 0,
                       "ts": 0.0, "kind": "state", "observation": {"text": "Launcher"}})
    for seq in range(1, count):
        if seq % 2:
            body = {"kind": "action", "action": {"type": "click", "target": f"tab {seq % 5}"}}
        else:
            body = {"kind": "state", "observation": {"text": f"Screen {seq % 16}\nitem {seq % 3}"}}
        yield parse_event({"v": 1, "run_id": "long", "task": "jl-save-textfile", "seq": seq,
                           "ts": float(seq), **body})


def judged_seconds(model, count: int) -> float:
    matcher = Matcher(model)
    start = time.perf_counter()
    for event in events(count):
        matcher.feed(event)
    matcher.close(count - 1)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="the longer run")
    longer = parser.parse_args().events
    model = learn(read_runs([REPO / "examples" / "jupyter" / "train"]))
    shorter = judged_seconds(model, longer // 10)
    longest = judged_seconds(model, longer)
    tracemalloc.start()  # a pass of its own: tracing slows every allocation several times
    judged_seconds(model, longer)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"judging {longer // 10:,} events: {shorter:.2f} s; {longer:,} events: {longest:.2f} s "
          f"= {longest / shorter:.1f}x (goal <= 12); peak memory {peak / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
