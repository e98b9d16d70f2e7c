"""What the worker's timer costs as runs pile up: a run stays for ``retention`` (an hour)
after its end, so a worker judging 400 runs a second keeps over a million, and a fleet keeps
thousands open at once. One tick of the timer (deadlines, missing events, ends that never
came; forgetting runs whose retention passed), after the tick that followed their events,
over 100 quiet open runs with 0 and with N finished runs kept, and over M quiet open runs,
on a partition caught up and on one behind its backlog (where no run may be called silent);
printed: the tick's mean time and the ratios to the first (goal <= 1.5 each: a tick costs
the runs whose time came, not what was seen).

    .venv/bin/python benchmarks/retained_runs.py [--finished N] [--open M]
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import time

from goals import goal
from processor_costs import judging_processor
from stream_workloads import EXAMPLES, text_only

from stream.commands.replay import read_events
from stream.judging.records import Source
from trustlayer.learn.learner import learn
from trustlayer.observe.event_parsing import run_of_events

OPEN, TICKS, PUB = 100, 200, 1000.0


def timer_with(finished: int, quiet: int = OPEN, behind: bool = False) -> float:
    """Seconds a tick takes over `quiet` open runs and `finished` finished ones, on a
    partition `behind` its backlog or caught up."""
    train = [[text_only(e) for e in run] for run in read_events([EXAMPLES / "train"], "path")]
    processor = judging_processor(learn([run_of_events(run) for run in train]))
    run = [text_only(e) for e in read_events([EXAMPLES / "test"], "path")[0]]
    records = [(f"{name}-{k}".encode(), json.dumps({**e, "run_id": f"{name}-{k}"}).encode(),
                Source(0, 0, PUB))
               for name, count, events in (("open", quiet, run[:3]), ("done", 1, run))
               for k in range(count) for e in events]
    if processor.process_batch(records).dlq:
        raise RuntimeError("records were refused")
    done = processor.runs.record("done-0")
    assert done is not None and done.final
    for k in range(1, finished):  # copies of the finished run: judging each costs minutes
        processor.runs.add(dataclasses.replace(done, run_id=f"done-{k}"))
    if not finished:
        processor.runs.forget(done)
    def caught_up(partition: int) -> bool:
        return not behind

    processor.silence.tick(PUB, caught_up)  # (the tick after their events looks at each run)
    gc.collect()  # what setting up left: a full collection inside the ticks timed them by chance
    start = time.perf_counter()
    for tick in range(TICKS):
        processor.silence.tick(PUB + 1 + tick / TICKS, caught_up)
    return (time.perf_counter() - start) / TICKS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finished", type=int, default=100_000,
                        help="finished runs kept (400 runs/s for 250 s)")
    parser.add_argument("--open", type=int, default=10_000,
                        help="quiet open runs (a fleet of agents at work)")
    args = parser.parse_args()
    alone, kept = timer_with(0), timer_with(args.finished)
    many, behind = timer_with(0, args.open), timer_with(0, args.open, behind=True)
    print(f"a tick over {OPEN} open runs: {alone * 1e3:.2f} ms alone, {kept * 1e3:.2f} ms with "
          f"{args.finished:,} finished runs kept")
    print(f"with ÷ alone = {kept / alone:.2f} {goal(kept / alone, '<=', 1.5)}")
    print(f"a tick over {args.open:,} open runs: {many * 1e3:.2f} ms; ÷ over {OPEN} = "
          f"{many / alone:.2f} {goal(many / alone, '<=', 1.5)}")
    print(f"the same, behind the backlog: {behind * 1e3:.2f} ms; ÷ over {OPEN} = "
          f"{behind / alone:.2f} {goal(behind / alone, '<=', 1.5)}")


if __name__ == "__main__":
    main()
