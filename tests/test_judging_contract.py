"""One contract for every way trustlayer judges a run (River's ``checks/`` style): the
batch validator, the incremental matcher resumed from a JSON snapshot before every event
(as the worker resumes after a restart), and the streaming worker's processor fed the
runs' events as records, interleaved as a fleet publishes them (also writing the runs in
parts and reading them back every few records). On the repository's
examples, its slice of real runs (tests/data: code, network, a conversation) and the real dev
traces, each gives every run the same final status, reason and cause."""
from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from devsets import DATA, DEV_TASKS, EXAMPLES, SHARED, SLICE_TASKS, dev
from streamkit import as_records

from stream.commands.replay import read_events, round_robin
from stream.judging.parts import is_part_key
from stream.judging.processor import StreamProcessor
from stream.judging.records import DictStore, Output, Source
from stream.judging.settings import WorkerSettings
from stream.models.registry import ModelRegistry
from trustlayer.judge.matcher import Matcher, judge_run
from trustlayer.judge.resume import restore, snapshot
from trustlayer.judge.status import Status
from trustlayer.learn.learner import learn
from trustlayer.model import Model
from trustlayer.observe.traces import read_runs

Verdicts = dict[str, tuple[str, str | None, str | None]]  # run id -> (status, reason, cause)
SHIPPED = {**{f"examples/{name}": EXAMPLES / name
               for name in ("jupyter", "tool-calling", "conversation")},
           **{f"data/{name}": DATA / name for name in SLICE_TASKS}}
TASKS = {**SHIPPED, **{name: SHARED / name for name in DEV_TASKS}}


def final(status: Status) -> tuple[str, str | None, str | None]:
    assert status.final, status
    return status.status, status.reason, status.cause


def batch(model: Model, test: Path) -> Verdicts:
    """``trustlayer validate``: each run fed to a matcher, then closed."""
    return {run.run_id: final(judge_run(model, run)) for run in read_runs([test])}


def restored_at_every_event(model: Model, test: Path) -> Verdicts:
    """The incremental matcher, its state written to JSON and read back before each event."""
    verdicts = {}
    for run in read_runs([test]):
        matcher = Matcher(model)
        for event in run.events:
            matcher = restore(model, json.loads(json.dumps(snapshot(matcher))))
            matcher.feed(event)
        verdicts[run.run_id] = final(matcher.status)
    return verdicts


def _processor(model: Model, store: DictStore) -> StreamProcessor:
    registry = ModelRegistry()
    registry.add(model)
    return StreamProcessor(registry, store, WorkerSettings(refine=False))


def _records(test: Path) -> list[tuple[bytes, bytes, Source]]:
    """The runs' events as records (screenshots inline), interleaved as a fleet sends them."""
    return as_records(round_robin(read_events([test])), pub=0.0)


def streamed(model: Model, test: Path) -> Verdicts:
    """The worker's processor over the runs' records; a run's verdict is its one final
    verdict record."""
    return _verdicts(_processor(model, DictStore()).process_batch(_records(test)))


def streamed_in_parts(model: Model, test: Path) -> Verdicts:
    """The worker's processor writing each run's record in parts of 3 events, every run
    written to the store and read back from it after every 4th record (as after a
    rebalance)."""
    store = DictStore()
    processor = _processor(model, store)
    processor.runs.part_events = 3
    out = Output()
    for number, (key, value, source) in enumerate(_records(test)):
        processor.process(key, value, source, out)
        if number % 4 == 3:
            processor.revoke()
            assert processor.assign([0], store.items()).verdicts == []  # the timer made none
    assert any(map(is_part_key, store))  # the runs were long enough to be written in parts
    return _verdicts(out)


def _verdicts(out: Output) -> Verdicts:
    assert out.dlq == []
    finals = [(run_id, record) for run_id, record in out.verdicts if record["final"]]
    verdicts = {run_id: (record["status"], record["reason"], record["cause"])
                for run_id, record in finals}
    assert len(verdicts) == len(finals)  # one final verdict per run
    return verdicts


JUDGES: dict[str, Callable[[Model, Path], Verdicts]] = {
    "restored at every event": restored_at_every_event, "streamed": streamed,
    "streamed in parts, read back every 4th record": streamed_in_parts}


@cache
def learned(task: str) -> Model:
    return learn(read_runs([TASKS[task] / "train"]))


@cache
def expected(task: str) -> Verdicts:
    return batch(learned(task), TASKS[task] / "test")


@pytest.mark.parametrize("judge", JUDGES)
@pytest.mark.parametrize("task", [*SHIPPED, *map(dev, DEV_TASKS)])
def test_every_way_of_judging_gives_the_batch_verdicts(task, judge):
    want = expected(task)
    assert {status for status, _, _ in want.values()} == {"passed", "failed"}  # both kinds
    assert JUDGES[judge](learned(task), TASKS[task] / "test") == want
