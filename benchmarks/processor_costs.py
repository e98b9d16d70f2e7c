"""What the streaming worker's processor costs without a broker: a text event whose run is
written to the table after every event, against ``json.loads`` of it, and a screenshot
event against a PNG decode of its frame."""
from __future__ import annotations

import base64
import io
import json
import time

from PIL import Image

# the benchmark modules put the repository on sys.path for the imports below them
from stream_workloads import EXAMPLES, copies

from stream.commands.replay import read_events
from stream.commands.replay import round_robin as interleave
from stream.judging.processor import StreamProcessor
from stream.judging.records import DictStore, Output, Source
from stream.judging.settings import WorkerSettings
from stream.models.registry import ModelRegistry
from trustlayer.learn.learner import learn
from trustlayer.model import Model
from trustlayer.observe.event_parsing import run_of_events


def _records(runs: list[list[dict]]) -> list[tuple[bytes, bytes, Source]]:
    """The events of `runs`, interleaved, as (key, value, source) records of one partition."""
    return [(e["run_id"].encode(), json.dumps(e).encode(), Source(0, i, time.time()))
            for i, e in enumerate(interleave(runs))]


def processing_cost(registry: ModelRegistry, runs: list[list[dict]]) -> float:
    """Seconds the worker's processor takes for the records of `runs`."""
    records = _records(runs)
    processor = StreamProcessor(registry, DictStore(), WorkerSettings(refine=False))
    start = time.perf_counter()
    processor.process_batch(records)
    processor.runs.flush()
    return time.perf_counter() - start


def written_per_event_cost(model: Model, runs: list[list[dict]]) -> tuple[float, float]:
    """(us per event in the processor when each run is written to the table after each of
    its events, us of json.loads of the same event): a fleet whose runs send about one event
    between two checkpoints (an agent's event a second, a checkpoint a second) writes a run's
    record for every event. Timed on a second fleet of `runs`' copies (the memos the first
    one filled are what a worker's are after its first runs)."""
    registry = ModelRegistry()
    registry.add(model)
    processor = StreamProcessor(registry, DictStore(), WorkerSettings(refine=False))
    for tag in ("warm", "timed"):
        records = _records(copies(runs, 100, tag))
        out = Output()
        start = time.perf_counter()
        for key, value, source in records:
            processor.process(key, value, source, out)
            processor.runs.flush()
        processor.count()
        judged = (time.perf_counter() - start) / len(records)
        if out.dlq:
            raise RuntimeError(f"records were refused: {out.dlq[0]}")
    start = time.perf_counter()
    for _, value, _ in records:
        json.loads(value)
    return judged * 1e6, (time.perf_counter() - start) / len(records) * 1e6


def screenshot_cost() -> tuple[float, float, float]:
    """(ms per screenshot state event in the processor, the same with the screenshots
    fingerprinted by the runner, ms per PNG decode)."""
    train = [[e for e in run] for run in read_events([EXAMPLES / "train"])]
    model = learn([run_of_events(r) for r in train])
    registry = ModelRegistry()
    registry.add(model)
    test = read_events([EXAMPLES / "test"])
    frames = [base64.b64decode(e["observation"]["screenshot"].split(",", 1)[1])
              for run in test for e in run if e["kind"] == "state"
              and e["observation"].get("screenshot")]
    start = time.perf_counter()
    for data in frames:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
    decode = (time.perf_counter() - start) / len(frames)
    per_event = processing_cost(registry, test) / len(frames)
    printed = processing_cost(registry, read_events([EXAMPLES / "test"], "fingerprint"))
    return per_event * 1000, printed / len(frames) * 1000, decode * 1000
