"""``trustlayer demo [DIR]``: the whole streaming service on this machine, in one command.

An embedded Kafka (:class:`stream.broker.EmbeddedKafka`) starts, a model is learned per task
from ``DIR/train``, a worker (``trustlayer worker``, in a subprocess) loads it, the runs of
``DIR/test`` are replayed as live runners would publish them, and the runs' statuses show
in a live table until every run has its final verdict. With ``--once`` each final verdict is
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
from types import SimpleNamespace
from typing import Any, TextIO

from trustlayer.cli import EXIT_BAD_INPUT, EXIT_OK, verdict_record
from trustlayer.learn import learn
from trustlayer.settings import Settings

from stream.broker import stop_process
from stream.cli import follow, topic_names, verdict_line
from stream.registry import training_set
from stream.replay import publish, read_events, schedule
from stream.topics import ensure_topics

READY = "trustlayer worker ready"


def demo_record(record: dict[str, Any]) -> dict[str, Any]:
    """A final verdict as ``demo --once --format json`` prints it: the fields of
    ``trustlayer validate --format json`` plus status, detected_at_seq, model_version."""
    fields = verdict_record(SimpleNamespace(**{**record, "verdict": record.get("verdict")}))
    return {**fields, "status": record["status"], "detected_at_seq": record["detected_at_seq"],
            "model_version": record["model_version"]}


def learn_models(train: Path, out: Path) -> list[str]:
    """Learn one model per task from the runs in `train`; write ``out/<task>.json``."""
    runs, causes = training_set(train)
    tasks = sorted({run.task for run in runs})
    for task in tasks:
        model = learn([r for r in runs if r.task == task], Settings(), causes=causes)
        model.save(out / f"{task}.json")
    return tasks


class WorkerProcess:
    """``trustlayer worker`` in a subprocess; :meth:`wait_ready` reads its stdout."""

    def __init__(self, argv: list[str], log_path: Path):
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "trustlayer.cli", "worker", *argv],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1)
        self.ready = threading.Event()
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
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


class LiveTable:
    """The runs and their latest status, redrawn in a terminal (a line per change if the
    output is not one)."""

    def __init__(self, run_ids: list[str], out: TextIO, redraw: bool):
        self.runs: dict[str, dict | None] = {rid: None for rid in run_ids}
        self.out, self.redraw = out, redraw
        self.started = time.monotonic()
        self.drawn = 0.0
        self.notes: list[str] = []

    def update(self, record: dict) -> None:
        self.runs[record["run_id"]] = record
        self._show(verdict_line(record))

    def note(self, text: str) -> None:
        """A line under the table (a new model version)."""
        self.notes = (self.notes + [text])[-5:]
        self._show(text)

    def _show(self, line: str) -> None:
        if not self.redraw:
            print(f"{time.monotonic() - self.started:6.1f}s  {line}", file=self.out, flush=True)
        elif time.monotonic() - self.drawn > 0.1 or self.done():
            self.draw()

    def done(self) -> bool:
        return all(r is not None and r.get("final") for r in self.runs.values())

    def draw(self) -> None:
        self.drawn = time.monotonic()
        width = max(map(len, self.runs)) + 2
        lines = ["\x1b[H\x1b[2J" + f"trustlayer demo: {len(self.runs)} runs, "
                 f"{time.monotonic() - self.started:.1f} s", "",
                 f"{'RUN':<{width}}{'STATUS':<10}{'MODEL':<7}{'COVER':>6}  {'SEQ':>4}  REASON"]
        for run_id, rec in self.runs.items():
            if rec is None:
                lines.append(f"{run_id:<{width}}{'waiting':<10}")
                continue
            status = rec["status"].upper() if rec.get("final") else rec["status"]
            seq = "" if rec.get("detected_at_seq") is None else rec["detected_at_seq"]
            reason = (f"{rec['cause']}: " if rec.get("cause") else "") + (rec.get("reason") or "")
            lines.append(f"{run_id:<{width}}{status:<10}v{rec['model_version']:<6}"
                         f"{rec['coverage']:>6.0%}  {seq!s:>4}  {reason[:90]}")
        lines += [""] + self.notes
        print("\n".join(lines), file=self.out, flush=True)


async def _watch(bootstrap: str, topics, plan, run_ids: list[str], args: argparse.Namespace,
                 timeout: float) -> set[str]:
    """Replay `plan` and show verdicts until every run is final; return runs left open."""
    final: dict[str, dict] = {}
    table = None if args.once else LiveTable(run_ids, sys.stdout, sys.stdout.isatty())

    async def collect() -> None:
        async for record in follow(bootstrap, topics.verdicts):
            if record.get("run_id") not in run_ids:
                continue
            if table is not None:
                table.update(record)
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
            if table is not None and entry.get("action") == "refined":
                changes = [f"+'{n}'" for n in entry.get("added", [])] + \
                    [f"-'{n}'" for n in entry.get("dropped", [])]
                table.note(f"model {model['task']} v{model['version']}: refined with "
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


def run_demo(args: argparse.Namespace) -> int:
    directory = Path(args.directory)
    train, test = directory / "train", directory / "test"
    for needed in (train, test):
        if not needed.is_dir():
            print(f"trustlayer demo: {needed}: no such directory (DIR needs train/ and test/)",
                  file=sys.stderr)
            return EXIT_BAD_INPUT
    speed = args.speed if args.speed is not None else (0.0 if args.once else 1.0)
    note = (lambda text: print(text, file=sys.stderr, flush=True)) if args.once or not sys.stdout.isatty() \
        else (lambda text: print(text, flush=True))
    work = Path(tempfile.mkdtemp(prefix="trustlayer-demo-"))
    broker = worker = None
    keep = False  # the worker's log stays when something went wrong
    t0 = time.monotonic()
    try:
        if args.broker:
            from stream.broker import broker_problem
            problem = broker_problem(args.broker, "trustlayer demo")
            if problem is not None:
                print(problem, file=sys.stderr)
                return EXIT_BAD_INPUT
            bootstrap, prefix = args.broker, f"demo-{uuid.uuid4().hex[:8]}"
        else:
            from stream.broker import EmbeddedKafka, KafkaLibsMissing
            try:
                broker = EmbeddedKafka()
            except KafkaLibsMissing as exc:
                print(f"trustlayer demo: {exc}", file=sys.stderr)
                return EXIT_BAD_INPUT
            note("starting Kafka ...")
            broker.start()
            bootstrap, prefix = broker.bootstrap, "trustlayer"
        topics = topic_names(prefix)
        ensure_topics(bootstrap, topics)
        models = work / "models"
        models.mkdir()
        tasks = learn_models(train, models)
        note(f"Kafka {bootstrap}; learned {', '.join(tasks)} from {train}")
        worker_args = ["--broker", bootstrap, "--models", str(models), "--topics", prefix,
                       "--app-id", f"trustlayer-demo-{uuid.uuid4().hex[:8]}",
                       "--metrics-port", str(args.metrics_port), "--session-timeout", "6"]
        worker_args += ["--no-refine", "--no-deadlines"] if args.once else ["--train", str(train)]
        worker = WorkerProcess(worker_args, work / "worker.log")
        if not worker.wait_ready(90):
            keep = True
            print(f"trustlayer demo: the worker did not start:\n"
                  f"{(work / 'worker.log').read_text(errors='replace')[-3000:]}", file=sys.stderr)
            return EXIT_BAD_INPUT
        runs = read_events([test])
        run_ids = [events[0]["run_id"] for events in runs]
        plan = schedule(runs, speed)
        note(f"worker ready after {time.monotonic() - t0:.1f} s; replaying {len(runs)} runs "
             f"({len(plan)} events) from {test} at speed {speed or 'max'}")
        left = asyncio.run(_watch(bootstrap, topics, plan, run_ids, args,
                                  max(1.0, args.timeout - (time.monotonic() - t0))))
        if left:
            keep = True
            print(f"trustlayer demo: no final verdict for {', '.join(sorted(left))} within "
                  f"{args.timeout:.0f} s; worker log: {work / 'worker.log'}", file=sys.stderr)
            return EXIT_BAD_INPUT
        note(f"every run has its final verdict ({time.monotonic() - t0:.1f} s in all)")
        return EXIT_OK
    finally:
        if worker is not None:
            worker.stop()
        if broker is not None:
            broker.stop()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
