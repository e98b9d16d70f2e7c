"""What an event costs the worker as its run grows: one run of the tests' kind
(``streamkit.long_run``: a screen of text, then a click) fed to the processor an event at a
time, its record written after each event (a runner sending about an event per checkpoint).
Printed at 256, 1,000, 5,000 and 10,000 events: the bytes the store holds for the run, the
bytes its last checkpoint wrote, and the mean cost of an event, judged and written, over the
256 events before; then that cost at the last mark ÷ at the first (goal <= 1.5: the work per
event does not grow with the run, stream.judging.parts).

    .venv/bin/python benchmarks/long_runs.py [--events N]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from goals import goal

from stream.judging.processor import StreamProcessor
from stream.judging.records import DictStore, Output
from stream.judging.settings import WorkerSettings
from stream.models.registry import ModelRegistry

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from streamkit import as_records, long_run, model  # the tests' long run, on their model

WINDOW = 256


class CountedStore(DictStore):
    """A store in memory that counts the bytes written to it."""

    written = 0

    def put(self, key: str, partition: int, value: bytes | None) -> None:
        self.written += len(value or b"")
        super().put(key, partition, value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000, help="the run's length")
    count = parser.parse_args().events
    registry = ModelRegistry()
    registry.add(model())
    store = CountedStore()
    # limits off: this run is long on purpose
    settings = WorkerSettings(refine=False, max_run_events=count + 1,
                              max_history_bytes=1 << 40)
    processor = StreamProcessor(registry, store, settings)
    marks = sorted({min(WINDOW, count), *(m for m in (1_000, 5_000, 10_000) if m < count),
                    count})
    out, costs, per_event = Output(), [], {}
    print(f"one run of {count:,} events, its record written after each event")
    print(f"  {'events':>7}  {'the store holds':>17}  {'last write':>10}  an event (mean of the "
          f"{WINDOW} before)")
    for seq, (key, value, source) in enumerate(as_records(long_run("long", count), pub=0.0),
                                               start=1):
        start = time.perf_counter()
        processor.process(key, value, source, out)
        before = store.written
        processor.runs.flush()
        costs.append(time.perf_counter() - start)
        if seq in marks:
            per_event[seq] = sum(costs[-WINDOW:]) / len(costs[-WINDOW:])
            held = sum(map(len, store.values())) / 1024
            print(f"  {seq:7,}  {held:6.1f} KB, {len(store):3} keys  "
                  f"{(store.written - before) / 1024:7.1f} KB  {per_event[seq] * 1e6:5.0f} us")
    if out.dlq:
        raise RuntimeError(f"records were refused: {out.dlq[0]}")
    ratio = per_event[marks[-1]] / per_event[marks[0]]
    print(f"an event at {marks[-1]:,} ÷ at {marks[0]:,} = {ratio:.2f} {goal(ratio, '<=', 1.5)}")


if __name__ == "__main__":
    main()
