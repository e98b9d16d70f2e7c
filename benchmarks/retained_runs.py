"""What the worker's timer costs as runs pile up: a run stays for ``retention`` (an hour)
after its end, so a worker judging 400 runs a second keeps over a million, and a fleet keeps
thousands open at once. One tick of the timer (deadlines, missing events, ends that never
came; forgetting runs whose retention passed), after the tick that followed their events,
over 100 quiet open runs with 0 and with N finished runs kept, and over M quiet open runs,
on a partition caught up and on one behind its backlog (where no run may be called silent);
printed: the tick's mean time and the ratios to the first (goal <= 1.5 each: a tick costs
the runs whose time came, not what was seen). Then what the finished runs kept cost Python's
garbage collector: a full collection (which holds the worker's event loop) with K distinct
finished runs kept, judged by the processor with their verdicts delivered.

    .venv/bin/python benchmarks/retained_runs.py [--finished N] [--open M] [--collect K]
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import time

from goals import goal
from processor_costs import fleet_records, judging_processor
from stream_workloads import EXAMPLES, copies, text_only

from stream.commands.replay import read_events
from stream.judging.processor import StreamProcessor
from stream.judging.records import Source
from trustlayer.learn.learner import learn
from trustlayer.observe.event_parsing import run_of_events

OPEN, TICKS, PUB = 100, 200, 1000.0


def _runs(fold: str) -> list[list[dict]]:
    """The examples' runs of `fold` (train, test), screenshots stripped."""
    return [[text_only(e) for e in run] for run in read_events([EXAMPLES / fold], "path")]


def _trained_processor() -> StreamProcessor:
    """A processor judging with the model of the examples' training runs."""
    return judging_processor(learn([run_of_events(run) for run in _runs("train")]))


def timer_with(finished: int, quiet: int = OPEN, behind: bool = False) -> float:
    """Seconds a tick takes over `quiet` open runs and `finished` finished ones, on a
    partition `behind` its backlog or caught up."""
    processor = _trained_processor()
    run = _runs("test")[0]
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


def collection_with(finished: int) -> float:
    """Seconds a full garbage collection takes (best of three) with `finished` distinct
    finished runs kept, beside what judging them left (memos); what came before the
    processor is frozen, as the worker freezes what it started with."""
    processor = _trained_processor()
    gc.collect()
    gc.freeze()
    records = fleet_records(copies(_runs("test"), finished, "kept"))
    for first in range(0, len(records), 500):
        out = processor.process_batch(records[first:first + 500])
        processor.runs.flush()
        processor.runs.delivered(out.verdicts)  # (as the worker's checkpoint does)
    if any(not rec.final for rec in processor.runs.records()):
        raise RuntimeError("runs were left open")
    del records
    times = []
    for _ in range(3):
        start = time.perf_counter()
        gc.collect()
        times.append(time.perf_counter() - start)
    gc.unfreeze()
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finished", type=int, default=100_000,
                        help="finished runs kept (400 runs/s for 250 s)")
    parser.add_argument("--open", type=int, default=10_000,
                        help="quiet open runs (a fleet of agents at work)")
    parser.add_argument("--collect", type=int, default=4000,
                        help="distinct finished runs kept for the collection timed")
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
    little, kept_many = collection_with(100), collection_with(args.collect)
    per_run = max(0.0, kept_many - little) / (args.collect - 100)
    print(f"a full garbage collection: {little * 1e3:.1f} ms with 100 finished runs kept, "
          f"{kept_many * 1e3:.1f} ms with {args.collect:,}: {per_run * 1e6:.1f} us a run "
          f"({per_run * 1e6:.1f} s for a million)")


if __name__ == "__main__":
    main()
