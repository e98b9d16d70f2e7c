"""Helpers shared by the streaming tests: the example runs as Kafka-style records, a processor
judging with the example model, the batch validator's verdicts, a worker subprocess and
reading a topic (the Prometheus server: prometheus_server.py)."""
from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from PIL import Image

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "jupyter"
TRAIN, TEST = EXAMPLES / "train", EXAMPLES / "test"

from stream.commands.replay import read_events  # noqa: E402
from stream.commands.replay import round_robin as interleave  # noqa: E402,F401 (for the tests)
from stream.judging.processor import StreamProcessor  # noqa: E402
from stream.judging.records import DictStore, Source, Store  # noqa: E402
from stream.judging.settings import WorkerSettings  # noqa: E402
from stream.kafka import clients  # noqa: E402
from stream.kafka.processes import stop_process  # noqa: E402
from stream.models.attest import Signer, local_signer  # noqa: E402
from stream.models.registry import ModelRegistry  # noqa: E402
from trustlayer.judge.matcher import judge_run  # noqa: E402
from trustlayer.judge.status import VALIDATE_FIELDS  # noqa: E402
from trustlayer.learn.learner import learn  # noqa: E402
from trustlayer.model import Model  # noqa: E402
from trustlayer.observe.trace_events import Run  # noqa: E402
from trustlayer.observe.traces import read_runs  # noqa: E402


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@cache
def train_runs() -> tuple[Run, ...]:
    return tuple(read_runs([TRAIN]))


@cache
def model():
    """The model of examples/jupyter/train (learned once per session; do not mutate)."""
    return learn(list(train_runs()))


def processor(store: Store | None = None, clock: Callable[[], float] = time.time,
              chosen: Model | None = None, **settings: Any) -> StreamProcessor:
    """A stream processor judging with :func:`model` (or `chosen`), its runs kept in
    `store` (a new dict), under :class:`WorkerSettings` of `settings`."""
    registry = ModelRegistry()
    registry.add(model() if chosen is None else chosen)
    return StreamProcessor(registry, DictStore() if store is None else store,
                           WorkerSettings(**settings), clock=clock)


@cache
def example_events() -> tuple[tuple[dict, ...], ...]:
    """The events of examples/jupyter/test, screenshots inlined, one tuple per run."""
    return tuple(tuple(run) for run in read_events([TEST]))


@cache
def batch_verdicts() -> dict[str, dict]:
    """`trustlayer validate --format json` records of the test runs, by run id."""
    return {run.run_id: judge_run(model(), run).to_json(VALIDATE_FIELDS)
            for run in read_runs([TEST])}


def renamed(events: Iterable[dict], run_id: str) -> list[dict]:
    return [{**event, "run_id": run_id} for event in events]


def long_run(run_id: str, count: int, end: bool = False) -> list[dict]:
    """`count` events of one run of :func:`model`'s task: a screen of text no training run
    showed, then a click, over and over (and an `end`)."""
    def body(seq: int) -> dict:
        if seq == count:
            return {"kind": "end", "outcome": "success"}
        if seq % 2:
            return {"kind": "action", "action": {"type": "click", "target": f"tab {seq % 5}"}}
        return {"kind": "state", "observation": {"text": f"Screen {seq % 16}\nitem {seq % 3}"}}
    return [{"v": 1, "run_id": run_id, "task": model().task, "seq": seq, "ts": float(seq),
             **body(seq)} for seq in range(count + end)]


def as_records(events: Iterable[dict], start_offset: int = 0, partition: int = 0,
               pub: float | None = None) -> list[tuple[bytes, bytes, Source]]:
    """(key, value, source) records with consecutive offsets."""
    now = time.time() if pub is None else pub
    return [(e["run_id"].encode(), json.dumps(e).encode(), Source(partition, start_offset + i, now))
            for i, e in enumerate(events)]


def finals(verdicts: Iterable[tuple[str, dict]]) -> dict[str, list[dict]]:
    """Final verdict records by run id (every one sent, duplicates included)."""
    by_run: dict[str, list[dict]] = {}
    for run_id, record in verdicts:
        if record["final"]:
            by_run.setdefault(run_id, []).append(record)
    return by_run


def drop_state(run: Run, state_id: str, new_id: str) -> Run:
    """`run` without the states that make milestone `state_id` of model(), as a new run."""
    drop = {seq for rid, seq in model().states[state_id].members if rid == run.run_id}
    kept = [e for e in run.events if e.seq not in drop]
    events = [replace(e, seq=i, run_id=new_id, raw={**e.raw, "seq": i, "run_id": new_id})
              for i, e in enumerate(kept)]
    return Run(new_id, run.task, events)


def relabel(run: Run, new_id: str) -> Run:
    events = [replace(e, run_id=new_id, raw={**e.raw, "run_id": new_id}) for e in run.events]
    return Run(new_id, run.task, events)


#: Runners and their keys, for tests of attested outcomes.
RUNNER_KEYS = {f"runner-{n}": f"the key of runner {n}, long enough".encode() for n in range(1, 5)}


def attested(run: Run, runner: str, keys: dict[str, bytes] = RUNNER_KEYS) -> Run:
    """`run` with its ``end`` attested by `runner` (see :mod:`stream.models.attest`)."""
    signer = Signer(runner, keys[runner])
    end = [signer.sign(event.raw) for event in run.events][-1]
    return Run(run.run_id, run.task, [*run.events[:-1],
                                      replace(run.events[-1], raw=end, meta=end["meta"])],
               run.source)


def png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("1", (width, height)).save(buffer, "PNG")
    return buffer.getvalue()


def data_uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def bad_records(images: Path) -> list[tuple[str, bytes, str]]:
    """(key, value, expected reason) of one bad record of each kind."""
    (images / "ok.png").write_bytes(png(4, 4))
    state = {"v": 1, "run_id": "bad", "task": model().task, "seq": 0, "ts": 1.0, "kind": "state",
             "observation": {"text": "hello"}}

    def shot(ref: str) -> bytes:
        return json.dumps({**state, "observation": {"screenshot": ref}}).encode()

    return [
        ("bad", b'{"v": 1, "run_id": "bad", "seq": ', "malformed_json"),
        ("bad", b"\xff\xfe not utf-8", "malformed_json"),
        ("bad", json.dumps({k: v for k, v in state.items() if k != "seq"}).encode(),
         "wrong_schema"),
        ("bad", json.dumps({**state, "kind": "teleport"}).encode(), "wrong_schema"),
        ("bad", json.dumps([1, 2]).encode(), "wrong_schema"),
        ("bad", shot(data_uri(png(7000, 6000))), "image_too_large"),
        ("bad", shot(data_uri(b"\x89PNG\r\n\x1a\n garbage")), "bad_image"),
        ("bad", shot("data:image/png;base64,@@@"), "bad_image"),
        ("bad", shot("../outside.png"), "path_outside_dir"),
        ("bad", shot("/etc/passwd"), "path_outside_dir"),
        ("bad", shot("missing.png"), "image_not_found"),
        ("other", json.dumps(state).encode(), "wrong_key"),
        ("bad", json.dumps({**state, "task": "no-such-task"}).encode(), "no_model"),
    ]


# -- Kafka ---------------------------------------------------------------------------------
def child_pids(pid: int) -> list[int]:
    """The PIDs of the processes whose parent is `pid` (from /proc)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:  # state, ppid, ...
                children.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return sorted(children)


class Worker:
    """``trustlayer worker`` in a subprocess, its stdout ("ready" lines) collected."""

    def __init__(self, bootstrap: str, prefix: str, app_id: str, models: Path, log: Path,
                 *extra: str):
        from stream.commands.demo import WorkerProcess

        self.argv = ["--broker", bootstrap, "--topics", prefix, "--app-id", app_id,
                     "--models", str(models), "--metrics-port", "0", "--session-timeout", "3",
                     "--log-level", os.environ.get("TRUSTLAYER_TEST_LOG", "warning"), *extra]
        self.log = log
        self.process = WorkerProcess(self.argv, log)

    @property
    def pid(self) -> int:
        return self.process.proc.pid

    def log_tail(self, chars: int = 6000) -> str:
        """The end of the worker's log (stderr), for a failure message."""
        text = self.log.read_text(errors="replace") if self.log.exists() else "(no log)"
        return f"--- {self.log} (last {chars} characters)\n{text[-chars:]}"

    def faust_pid(self, timeout: float = 30) -> int:
        """The PID of the Faust worker that ``trustlayer worker`` (a supervisor) runs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            children = child_pids(self.pid)
            if children:
                return children[0]
            time.sleep(0.1)
        raise AssertionError(f"no Faust worker under {self.pid}:\n{self.log_tail()}")

    def ready_lines(self) -> list[str]:
        return [line for line in self.process.lines if "trustlayer worker ready" in line]

    def wait_ready(self, count: int = 1, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.proc.poll() is not None:
                raise AssertionError(f"worker exited {self.process.proc.returncode}:\n"
                                     f"{self.log_tail()}")
            lines = self.ready_lines()
            if len(lines) >= count:
                return lines[count - 1]
            time.sleep(0.1)
        raise AssertionError(f"worker not ready ({count}) in {timeout} s:\n{self.log_tail()}")

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        self.process.proc.wait()
        self.process.log.close()

    def stop(self) -> None:
        self.process.stop()


def read_topic(bootstrap: str, topic: str, until: Callable[[list], bool], timeout: float = 60,
               decode: Callable = json.loads) -> list:
    """Values of `topic` from its start until `until(values)` or `timeout` seconds."""
    async def run() -> list:
        consumer = clients.consumer(bootstrap, topic, auto_offset_reset="earliest")
        await consumer.start()
        values: list = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            while loop.time() < deadline and not until(values):
                batches = await consumer.getmany(timeout_ms=200)
                for records in batches.values():
                    values += [decode(r.value) for r in records]
            if not until(values):
                tps = sorted(consumer.assignment())
                ends = await consumer.end_offsets(tps) if tps else {}
                print(f"read_topic({topic}): {len(values)} values in {timeout} s; "
                      f"assignment {tps}; positions "
                      f"{[await consumer.position(tp) for tp in tps]}; ends {ends}",
                      file=sys.stderr)
        finally:
            await consumer.stop()
        return values

    return asyncio.run(run())


def await_topic(bootstrap: str, topic: str, until: Callable[[list], bool], *workers: Worker,
                timeout: float = 60, decode: Callable = json.loads) -> list:
    """:func:`read_topic` that fails, with the workers' logs, unless `until(values)` held."""
    values = read_topic(bootstrap, topic, until, timeout, decode)
    assert until(values), (f"{topic}: not there after {timeout} s ({len(values)} values read)\n"
                           + "\n".join(worker.log_tail() for worker in workers))
    return values


def await_committed(bootstrap: str, group: str, topic: str, count: int,
                    timeout: float = 30) -> None:
    """Wait until `group` has committed `count` records of `topic` (a fresh topic): the
    worker commits an offset only once the runs its record changed are written."""
    async def committed() -> int:
        async with clients.admin(bootstrap) as admin:
            offsets = await admin.list_consumer_group_offsets(group)
        return sum(meta.offset for tp, meta in offsets.items() if tp.topic == topic)

    deadline = time.monotonic() + timeout
    while (done := asyncio.run(committed())) < count:
        assert time.monotonic() < deadline, f"{group}: {done} of {count} records committed"
        time.sleep(0.2)


def produce(bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes]]) -> None:
    async def run() -> None:
        async with clients.producer(bootstrap, linger_ms=2) as producer:
            futures = [await producer.send(topic, key=k, value=v) for k, v in records]
            await asyncio.gather(*futures)

    asyncio.run(run())


def publish_events(bootstrap: str, topic: str, events: Iterable[dict],
                   signer: Signer | None = None) -> None:
    """Publish `events`, each run's ``end`` attested by `signer` (default: the machine's
    runner, as ``trustlayer replay`` does)."""
    signer = signer or local_signer()
    produce(bootstrap, topic, [(e["run_id"].encode(), json.dumps(signer.sign(e)).encode())
                               for e in events])


#: For tests of the timer: a model's deadline floor above the example model's deadlines to
#: leave a state (10 s at most), so that the floor is the deadline that binds, and a worker's
#: ``--end-silence`` after it.
TIMER_FLOOR, TIMER_END_SILENCE = 12.0, 20.0


def setup(kafka, tmp_path: Path, deadline_floor: float | None = None):
    """Fresh topics (a new prefix) on `kafka` and a models directory holding model(), its
    ``deadline_floor`` set to `deadline_floor` if given (a test of the timer need not wait
    the default's 30 s): (prefix, topic names, models directory)."""
    from stream.kafka.names import topic_names
    from stream.kafka.topics import ensure_topics

    prefix = unique("t")
    topics = topic_names(prefix)
    ensure_topics(kafka.bootstrap, topics)
    models = tmp_path / "models"
    models.mkdir(exist_ok=True)
    saved = model() if deadline_floor is None else replace(
        model(), settings=replace(model().settings, deadline_floor=deadline_floor))
    saved.save(models / f"{model().task}.json")
    return prefix, topics, models


def all_final(runs: Iterable[list[dict]]) -> Callable[[list], bool]:
    """`until` for :func:`await_topic`: every run of `runs` has a final verdict."""
    wanted = {run[0]["run_id"] for run in runs}
    return lambda values: wanted <= {v["run_id"] for v in values if v.get("final")}


def all_seen(runs: Iterable[list[dict]]) -> Callable[[list], bool]:
    """`until` for :func:`await_topic`: every run of `runs` has a verdict."""
    wanted = {run[0]["run_id"] for run in runs}
    return lambda values: wanted <= {v["run_id"] for v in values}


def final_by_run(values: list[dict]) -> dict[str, set[str]]:
    """Distinct final verdicts per run (as canonical JSON)."""
    out: dict[str, set[str]] = {}
    for record in values:
        if record.get("final"):
            out.setdefault(record["run_id"], set()).add(json.dumps(record, sort_keys=True))
    return out


class CpuHogs:
    """`count` processes that keep a core busy for at most `seconds` (they stop by
    themselves, and are stopped by their PIDs on exit): a busy machine.

    >>> with CpuHogs(1, seconds=5) as hogs: alive = hogs.procs[0].poll() is None
    >>> alive, hogs.procs[0].poll() is not None
    (True, True)
    """

    def __init__(self, count: int = 2, seconds: float = 600.0):
        self.count, self.seconds = count, seconds
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> CpuHogs:
        spin = (f"import time\nend = time.monotonic() + {self.seconds:f}\n"
                "while time.monotonic() < end: pass")
        self.procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(self.count)]
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            stop_process(proc, timeout=5)
