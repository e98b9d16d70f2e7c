"""What the streaming worker's processor costs without a broker: a text event in batches of
500 (each run written once per batch, as a busy worker does) and one whose run is written to
the table after every event, against ``json.loads`` of it, and a screenshot event against a
PNG decode of its frame. ``stream_throughput.py`` prints these beside the broker's figures;
run alone (about 30 s, no broker) it prints them in the same run, for a change to the
processor:

    .venv/bin/python benchmarks/processor_costs.py
"""
from __future__ import annotations

import base64
import io
import json
import time

# the benchmark modules put the repository on sys.path for the imports below them
from goals import goal
from PIL import Image
from stream_workloads import EXAMPLES, copies, text_only

from stream.commands.replay import read_events
from stream.commands.replay import round_robin as interleave
from stream.judging.processor import StreamProcessor
from stream.judging.records import DictStore, Output, Source
from stream.judging.settings import WorkerSettings
from stream.models.registry import ModelRegistry
from trustlayer.learn.learner import learn
from trustlayer.model import Model
from trustlayer.observe.event_parsing import run_of_events


def fleet_records(runs: list[list[dict]]) -> list[tuple[bytes, bytes, Source]]:
    """The events of `runs`, interleaved, as (key, value, source) records of one partition."""
    return [(e["run_id"].encode(), json.dumps(e).encode(), Source(0, i, time.time()))
            for i, e in enumerate(interleave(runs))]


def judging_processor(model: Model) -> StreamProcessor:
    """A processor judging with `model` alone, its runs in a dict, refinement off."""
    registry = ModelRegistry()
    registry.add(model)
    return StreamProcessor(registry, DictStore(), WorkerSettings(refine=False))


def processing_cost(model: Model, runs: list[list[dict]]) -> float:
    """Seconds the worker's processor takes for the records of `runs`."""
    records = fleet_records(runs)
    processor = judging_processor(model)
    start = time.perf_counter()
    processor.process_batch(records)
    processor.runs.flush()
    return time.perf_counter() - start


def _loads_cost(records: list[tuple[bytes, bytes, Source]]) -> float:
    """us of ``json.loads`` of a record's value, on average over `records`."""
    start = time.perf_counter()
    for _, value, _ in records:
        json.loads(value)
    return (time.perf_counter() - start) / len(records) * 1e6


def batched_cost(model: Model, runs: list[list[dict]], batch: int = 500) -> tuple[float, float]:
    """(us per event in the processor fed `runs`' events in batches of `batch`, each run
    written once per batch; us of json.loads of the same event), best of four fleets of
    `runs`' copies after one that fills the memos."""
    processor = judging_processor(model)
    times = []
    for tag in ("warm", "t1", "t2", "t3", "t4"):
        records = fleet_records(copies(runs, 200, tag))
        start = time.perf_counter()
        for first in range(0, len(records), batch):
            if processor.process_batch(records[first:first + batch]).dlq:
                raise RuntimeError(f"records of fleet {tag} were refused")
            processor.runs.flush()
        times.append((time.perf_counter() - start) / len(records))
    return min(times[1:]) * 1e6, _loads_cost(records)


def written_per_event_cost(model: Model, runs: list[list[dict]]) -> tuple[float, float]:
    """(us per event in the processor when each run is written to the table after each of
    its events, us of json.loads of the same event): a fleet whose runs send about one event
    between two checkpoints (an agent's event a second, a checkpoint a second) writes a run's
    record for every event. Timed on a second fleet of `runs`' copies (the memos the first
    one filled are what a worker's are after its first runs)."""
    processor = judging_processor(model)
    for tag in ("warm", "timed"):
        records = fleet_records(copies(runs, 100, tag))
        out = Output()
        start = time.perf_counter()
        for key, value, source in records:
            processor.process(key, value, source, out)
            processor.runs.flush()
        processor.count()
        judged = (time.perf_counter() - start) / len(records)
        if out.dlq:
            raise RuntimeError(f"records were refused: {out.dlq[0]}")
    return judged * 1e6, _loads_cost(records)


def screenshot_cost() -> tuple[float, float, float]:
    """(ms per screenshot state event in the processor, the same with the screenshots
    fingerprinted by the runner, ms per PNG decode)."""
    train = [[e for e in run] for run in read_events([EXAMPLES / "train"])]
    model = learn([run_of_events(r) for r in train])
    test = read_events([EXAMPLES / "test"])
    frames = [base64.b64decode(e["observation"]["screenshot"].split(",", 1)[1])
              for run in test for e in run if e["kind"] == "state"
              and e["observation"].get("screenshot")]
    start = time.perf_counter()
    for data in frames:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
    decode = (time.perf_counter() - start) / len(frames)
    per_event = processing_cost(model, test) / len(frames)
    printed = processing_cost(model, read_events([EXAMPLES / "test"], "fingerprint"))
    return per_event * 1000, printed / len(frames) * 1000, decode * 1000


def report(model: Model, runs: list[list[dict]]) -> list[str]:
    """The figures above as printed, `model` judging the text events of `runs`."""
    batched, read = batched_cost(model, runs)
    written, read_one = written_per_event_cost(model, runs)
    per_event, printed, decode = screenshot_cost()
    return [f"text/a11y event in batches of 500: {batched:.0f} us = {batched / read:.1f}x "
            "json.loads of it",
            f"text/a11y event written after every event: {written:.0f} us = "
            f"{written / read_one:.1f}x json.loads of it",
            f"screenshot event {per_event:.2f} ms / PNG decode {decode:.2f} ms = "
            f"{per_event / decode:.2f} {goal(per_event / decode, '<=', 0.5)}",
            f"fingerprinted by the runner {printed:.2f} ms / PNG decode = "
            f"{printed / decode:.2f} {goal(printed / decode, '<=', 0.5)}"]


if __name__ == "__main__":
    train = [[text_only(e) for e in run] for run in read_events([EXAMPLES / "train"])]
    test = [[text_only(e) for e in run] for run in read_events([EXAMPLES / "test"])]
    print("\n".join(report(learn([run_of_events(r) for r in train]), test)))
