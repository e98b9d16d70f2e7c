"""``trustlayer demo [DIR]``: the whole streaming service on this machine, in one command.

An embedded Kafka (:class:`stream.kafka.broker.EmbeddedKafka`) starts, a model is learned per task
from ``DIR/train``, a worker (``trustlayer worker``, in a subprocess) loads it, the runs of
``DIR/test`` are replayed as live runners would publish them, and the runs' statuses show
in a live table fitted to the terminal (:mod:`stream.commands.screen`) until every run has its final
verdict, followed by every reason in full and the next step (``trustlayer report``); without
a terminal, a line per change. The worker runs in a temporary folder (Faust's data goes
there), removed at the end. SIGTERM and SIGHUP stop the worker and the broker as Ctrl-C does.
With ``--once`` each final verdict is
printed once (``--format json``: the fields of ``trustlayer validate --format json`` plus
``status``, ``detected_at_seq`` and ``model_version``) and refinement and timer verdicts are
off, so the verdicts are comparable with the batch validator's.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from stream.commands.console import follow, verdict_line
from stream.commands.replay import publish, read_events, schedule
from stream.commands.screen import Screen
from stream.kafka.names import topic_names
from stream.kafka.processes import die_with_parent, stop_process, stopped_as_by_ctrl_c
from stream.kafka.topics import ensure_topics
from trustlayer.errors import EXIT_BAD_INPUT, EXIT_OK, TraceError
from trustlayer.judge.status import VALIDATE_FIELDS
from trustlayer.learn.learner import learn
from trustlayer.observe.traces import load_labels, read_training
from trustlayer.settings import Settings

READY = "trustlayer worker ready"


def ready_partitions(line: str) -> list[int]:
    """The partitions a worker's ready line (``trustlayer worker ready: APP partitions
    [0, 1] open runs N``) says it holds."""
    return json.loads(line.split(" partitions ", 1)[1].split(" open runs", 1)[0])


def demo_record(record: dict[str, Any]) -> dict[str, Any]:
    """A final verdict as ``demo --once --format json`` prints it: the fields of
    ``trustlayer validate --format json`` plus status, detected_at_seq, model_version."""
    return {name: record[name]
            for name in (*VALIDATE_FIELDS, "status", "detected_at_seq", "model_version")}


def learn_models(train: Path, out: Path) -> list[str]:
    """Learn one model per task from the runs in `train`; write ``out/<task>.json``."""
    runs, causes = read_training([train])
    tasks = sorted({run.task for run in runs})
    for task in tasks:
        model = learn([r for r in runs if r.task == task], Settings(), causes=causes)
        model.save(out / f"{task}.json")
    return tasks


class WorkerProcess:
    """``trustlayer worker`` in a subprocess, run in `cwd` if given (Faust's data folder goes
    there: give absolute paths then); :meth:`wait_ready` reads its stdout."""

    def __init__(self, argv: list[str], log_path: Path, cwd: Path | None = None):
        self.log = open(log_path, "ab")  # noqa: SIM115 (open while it runs)
        self.proc = subprocess.Popen(  # no orphan if we are killed:
            [sys.executable, "-m", "trustlayer.cli", "worker", *argv], cwd=cwd,
            stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1,
            preexec_fn=die_with_parent)  # noqa: PLW1509
        self.ready = threading.Event()
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None  # Popen(stdout=PIPE)
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())
            if READY in line:
                self.ready.set()

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            if self.ready.wait(0.2):
                return True
        return False

    def stop(self, timeout: float = 15.0) -> None:
        stop_process(self.proc, timeout)
        self.log.close()


async def _watch(bootstrap: str, topics, plan, run_ids: list[str], args: argparse.Namespace,
                 timeout: float, screen: Screen | None) -> set[str]:
    """Replay `plan` and show verdicts (on `screen`, or with ``--once`` each final verdict
    once) until every run is final; return the runs left open."""
    final: dict[str, dict] = {}

    async def collect() -> None:
        async for record in follow(bootstrap, topics.verdicts):
            if record.get("run_id") not in run_ids:
                continue
            if screen is not None:
                screen.update(record)
            if record.get("final") and record["run_id"] not in final:
                final[record["run_id"]] = record
                if args.once:
                    line = (json.dumps(demo_record(record)) if args.format == "json"
                            else verdict_line(record))
                    print(line, flush=True)
            if len(final) == len(run_ids):
                return

    async def models() -> None:
        async for model in follow(bootstrap, topics.models):
            entry = (model.get("history") or [{}])[-1]
            if screen is not None and entry.get("action") == "refined":
                changes = [f"+'{n}'" for n in entry.get("added", [])] + \
                    [f"-'{n}'" for n in entry.get("dropped", [])]
                screen.note(f"model {model['task']} v{model['version']}: refined with "
                            f"{', '.join(entry.get('runs', []))}; milestones "
                            f"{' '.join(changes) or 'unchanged'}")

    replay = asyncio.create_task(publish(bootstrap, topics.events, plan))
    watcher = asyncio.create_task(models())
    try:
        await asyncio.wait_for(collect(), timeout)
    except asyncio.TimeoutError:
        pass
    finally:
        for task in (replay, watcher):
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    return set(run_ids) - set(final)


def _labels(test: Path) -> dict[str, dict]:
    """``test/labels.json`` if there is one that reads (else no EXPECTED column values)."""
    try:
        return load_labels(test) if (test / "labels.json").is_file() else {}
    except TraceError as exc:
        print(f"trustlayer demo: {exc} (no EXPECTED column)", file=sys.stderr)
        return {}


def _replay_and_show(bootstrap: str, topics, plan, run_ids: list[str], test: Path,
                     args: argparse.Namespace, timeout: float,
                     console: Any) -> tuple[set[str], Screen | None]:
    """Replay and watch: on a terminal a live table (rich), else a line per change.
    Returns the runs left open and the screen."""
    from rich.live import Live

    if args.once:
        return asyncio.run(_watch(bootstrap, topics, plan, run_ids, args, timeout, None)), None
    live = console.is_terminal
    screen = Screen(run_ids, _labels(test), f"trustlayer demo · {test}",
                    None if live else lambda text: console.print(text, highlight=False,
                                                                soft_wrap=True))
    with Live(screen, console=console, refresh_per_second=4) if live else contextlib.nullcontext():
        left = asyncio.run(_watch(bootstrap, topics, plan, run_ids, args, timeout, screen))
    if live:  # the table cut each reason to its line: here they are whole
        console.print(Text("\nReasons in full:", "bold"))
        for line in screen.reasons():
            console.print(line, soft_wrap=False)
        console.print()
    return left, screen


def next_step(screen: Screen, train: Path, test: Path) -> str:
    """The closing lines: agreement with labels.json, and how to see why."""
    agree, labelled = screen.agreement()
    lines = [f"{agree} of {labelled} labelled runs judged as labelled."] if labelled else []
    return "\n".join(lines + ["Next, see why each run passed or failed, frame by frame:",
                              f"  trustlayer learn {train} -o model.json",
                              (f"  trustlayer report model.json {test} -o report.html "
                               f"--train {train}")])


def run_demo(args: argparse.Namespace, console: Any = None) -> int:
    """``trustlayer demo``: learn, start Kafka (unless ``--broker``) and a worker, replay
    ``DIR/test`` and show the verdicts on `console` (a :class:`rich.console.Console`, by
    default standard output). SIGTERM and SIGHUP stop the worker and the broker too."""
    with stopped_as_by_ctrl_c():
        return _run_demo(args, console or Console(highlight=False))


class _Refused(Exception):
    """The demo cannot start: the message says why, in one line."""


def _checked_broker(bootstrap: str) -> str:
    """`bootstrap`, a broker the user gave, if it answers (else :class:`_Refused`)."""
    from stream.kafka.probe import broker_problem
    problem = broker_problem(bootstrap, "trustlayer demo")
    if problem is not None:
        raise _Refused(problem)
    return bootstrap


def _embedded_broker() -> Any:
    """A one-node Kafka of the cached jars, not started (else :class:`_Refused`)."""
    from stream.kafka.broker import EmbeddedKafka, KafkaLibsMissing
    try:
        return EmbeddedKafka()
    except KafkaLibsMissing as exc:
        raise _Refused(f"trustlayer demo: {exc}") from None


def _start_worker(args: argparse.Namespace, bootstrap: str, prefix: str, models: Path,
                  train: Path, work: Path) -> WorkerProcess:
    """The demo's worker, started with its data and log in `work`."""
    worker_args = ["--broker", bootstrap, "--models", str(models), "--topics", prefix,
                   "--app-id", f"trustlayer-demo-{uuid.uuid4().hex[:8]}",
                   "--metrics-port", str(args.metrics_port), "--session-timeout", "6"]
    worker_args += ["--no-refine", "--no-deadlines"] if args.once \
        else ["--train", str(train.resolve())]
    return WorkerProcess(worker_args, work / "worker.log", cwd=work)


def _folders(directory: Path) -> tuple[Path, Path]:
    """`directory`'s train/ and test/ (else :class:`_Refused`)."""
    train, test = directory / "train", directory / "test"
    for needed in (train, test):
        if not needed.is_dir():
            raise _Refused(f"trustlayer demo: {needed}: no such directory (DIR needs train/ "
                           "and test/)")
    return train, test


def _run_demo(args: argparse.Namespace, console: Any) -> int:
    speed = args.speed if args.speed is not None else (0.0 if args.once else 1.0)
    note = (lambda text: print(text, file=sys.stderr, flush=True)) if args.once \
        else (lambda text: console.print(text, highlight=False, soft_wrap=True))
    work = Path(tempfile.mkdtemp(prefix="trustlayer-demo-"))
    broker = worker = None
    keep = False  # the worker's log stays when something went wrong
    t0 = time.monotonic()
    try:
        train, test = _folders(Path(args.directory))
        if args.broker:
            bootstrap, prefix = _checked_broker(args.broker), f"demo-{uuid.uuid4().hex[:8]}"
        else:
            broker = _embedded_broker()
            note("starting Kafka ...")
            broker.start()
            bootstrap, prefix = broker.bootstrap, "trustlayer"
        topics = topic_names(prefix)
        ensure_topics(bootstrap, topics)
        models = work / "models"
        models.mkdir()
        tasks = learn_models(train, models)
        note(f"Kafka {bootstrap}; learned {', '.join(tasks)} from {train}")
        worker = _start_worker(args, bootstrap, prefix, models, train, work)
        if not worker.wait_ready(90):
            keep = True
            print(f"trustlayer demo: the worker did not start:\n"
                  f"{(work / 'worker.log').read_text(errors='replace')[-3000:]}", file=sys.stderr)
            return EXIT_BAD_INPUT
        runs = read_events([test])
        run_ids = [events[0]["run_id"] for events in runs]
        plan = schedule(runs, speed)
        note(f"worker (pid {worker.proc.pid}) ready after {time.monotonic() - t0:.1f} s; "
             f"replaying {len(runs)} runs ({len(plan)} events) from {test} at speed "
             f"{speed or 'max'}")
        left, screen = _replay_and_show(bootstrap, topics, plan, run_ids, test, args,
                                        max(1.0, args.timeout - (time.monotonic() - t0)),
                                        console)
        if left:
            keep = True
            print(f"trustlayer demo: no final verdict for {', '.join(sorted(left))} within "
                  f"{args.timeout:.0f} s; worker log: {work / 'worker.log'}, its end:\n"
                  f"{(work / 'worker.log').read_text(errors='replace')[-3000:]}",
                  file=sys.stderr)
            return EXIT_BAD_INPUT
        note(f"every run has its final verdict ({time.monotonic() - t0:.1f} s in all)")
        if screen is not None:
            note(next_step(screen, train, test))
        return EXIT_OK
    except _Refused as refused:
        print(refused, file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        if worker is not None:
            worker.stop()
        if broker is not None:
            broker.stop()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
