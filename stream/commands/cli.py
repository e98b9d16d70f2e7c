"""The streaming commands of ``trustlayer`` (entry point ``trustlayer.commands``):
``broker``, ``worker``, ``replay``, ``verdicts``, ``models history|rollback`` and ``demo``.

Every command that talks to Kafka takes ``--broker HOST:PORT`` (default
``$TRUSTLAYER_BROKER`` or 127.0.0.1:9092) and ``--topics PREFIX`` (topic names
``PREFIX.events``, ``PREFIX.verdicts``, ``PREFIX.models``, ``PREFIX.events.dlq``; default
``trustlayer``).
"""
from __future__ import annotations

import argparse
import asyncio
import functools
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from trustlayer.errors import EXIT_BAD_INPUT, EXIT_OK

DEFAULT_BROKER = "127.0.0.1:9092"
EXTRA_MODULES = ("faust", "aiokafka", "prometheus_client")  # what `[stream]` installs
REPO_EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "jupyter"


def _kafka_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--broker", default=os.environ.get("TRUSTLAYER_BROKER", DEFAULT_BROKER),
                        help="Kafka bootstrap HOST:PORT (default $TRUSTLAYER_BROKER or "
                        f"{DEFAULT_BROKER})")
    parser.add_argument("--topics", default="trustlayer", metavar="PREFIX",
                        help="topic name prefix (default trustlayer: trustlayer.events, ...)")


def needs_broker(command: str) -> Callable:
    """Run a command only if a Kafka broker answers at its ``--broker``; else one line
    (the address, how to start one) and exit code 2."""
    def wrap(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        @functools.wraps(func)
        def run(args: argparse.Namespace) -> int:
            from stream.kafka.probe import broker_problem

            problem = broker_problem(args.broker, f"trustlayer {command}")
            if problem is not None:
                print(problem, file=sys.stderr)
                return EXIT_BAD_INPUT
            return func(args)
        return run
    return wrap


def missing_extra() -> list[str]:
    """The modules of the ``[stream]`` extra that are not installed (one imported already
    is: faust's lazy module has no ``__spec__`` for ``find_spec`` to read)."""
    return [name for name in EXTRA_MODULES
            if sys.modules.get(name, ...) is None
            or (name not in sys.modules and importlib.util.find_spec(name) is None)]


def needs_extra(command: str, missing: list[str]) -> Callable[[argparse.Namespace], int]:
    """A command that only says how to install the streaming extra it needs."""
    def run(_: argparse.Namespace) -> int:
        print(f"trustlayer {command}: needs the streaming extra ({', '.join(missing)} not "
              "installed): pip install '.[stream]' in the repository (or `bash .ci/setup`, "
              "which also fetches Kafka)", file=sys.stderr)
        return EXIT_BAD_INPUT
    return run


# -- broker ---------------------------------------------------------------------------------
def cmd_broker(args: argparse.Namespace) -> int:
    from stream.kafka.broker_command import main as broker_main
    return broker_main((["--libs", args.libs] if args.libs else []) +
                       (["--keep"] if args.keep else []) +
                       (["--data", args.data] if args.data else []) + ["--port", str(args.port)])


# -- worker ---------------------------------------------------------------------------------
def worker_config(args: argparse.Namespace):
    from stream.judging.settings import WorkerSettings
    from stream.kafka.topics import topic_names
    from stream.models.attest import runner_keys
    from stream.worker.config import WorkerConfig

    settings = WorkerSettings(
        images_dir=Path(args.images).resolve() if args.images else None,
        reorder_window=args.reorder_window, reorder_timeout=args.reorder_timeout,
        deadlines=not args.no_deadlines, refine=not args.no_refine,
        refine_on_verdict=args.refine_on_verdict, max_run_events=args.max_run_events,
        runner_keys={} if args.no_refine else runner_keys(), end_silence=args.end_silence,
        shadow_runs=args.shadow_runs, decode_budget=args.decode_budget)
    return WorkerConfig(
        bootstrap=args.broker, app_id=args.app_id, topics=topic_names(args.topics),
        partitions=args.partitions, models_dir=Path(args.models) if args.models else None,
        train_dirs=[Path(d) for d in args.train], settings=settings, drop_after=args.drop_after,
        metrics_port=args.metrics_port, metrics_addr=args.metrics_addr,
        session_timeout=args.session_timeout,
        instance_id=args.instance_id, stall_restart=args.stall_restart,
        heartbeat_interval=min(1.0, args.session_timeout / 4), tick_interval=args.tick,
        fetch_buffer_bytes=int(args.fetch_buffer * 1024 * 1024))


def cmd_worker(args: argparse.Namespace) -> int:
    import logging

    from stream.worker.internals import untested
    from stream.worker.supervise import child_stalls, supervise

    if problem := untested():
        print(f"trustlayer worker: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.models and not Path(args.models).is_dir():
        print(f"trustlayer worker: --models {args.models}: no such directory", file=sys.stderr)
        return EXIT_BAD_INPUT
    stalls = child_stalls()
    if stalls is None:  # this process supervises; the worker runs in its child
        command = [sys.executable, "-m", "trustlayer.cli", *sys.argv[1:]]
        return needs_broker("worker")(lambda _: supervise(command))(args)
    from stream.worker.app import run_worker

    logging.getLogger("trustlayer").setLevel(args.log_level.upper())
    logging.getLogger("stream").setLevel(args.log_level.upper())
    return run_worker(worker_config(args), loglevel=args.log_level, stalls=stalls)


# -- replay ---------------------------------------------------------------------------------
@needs_broker("replay")
def cmd_replay(args: argparse.Namespace) -> int:
    from stream.commands.replay import replay
    from stream.kafka.topics import ensure_topics, topic_names

    names = topic_names(args.topics)
    ensure_topics(args.broker, names)
    stats = replay(args.broker, names.events, args.paths, speed=args.speed,
                   stagger=args.stagger, screenshots=args.screenshots)
    print(f"published {stats.events} events of {stats.runs} runs ({stats.bytes / 1e6:.1f} MB) "
          f"to {names.events} in {stats.seconds:.1f} s", file=sys.stderr)
    return EXIT_OK


# -- verdicts -------------------------------------------------------------------------------
@needs_broker("verdicts")
def cmd_verdicts(args: argparse.Namespace) -> int:
    from stream.commands.console import follow, verdict_line
    from stream.kafka.topics import topic_names

    names = topic_names(args.topics)

    async def run() -> None:
        async for record in follow(args.broker, names.verdicts, not args.new):
            if args.final and not record.get("final"):
                continue
            print(json.dumps(record) if args.format == "json" else verdict_line(record), flush=True)

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:  # `trustlayer verdicts | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK


# -- models ---------------------------------------------------------------------------------
async def read_models(bootstrap: str, topic: str):
    """A registry with every model version still in `topic` (read to its end)."""
    from stream.deadletter import Rejected
    from stream.kafka import clients
    from stream.models.registry import ModelRegistry
    from stream.models.signing import model_key, verified_model

    registry, key = ModelRegistry(), model_key()
    async with clients.consumer(bootstrap) as consumer:
        end = await clients.assign_all(consumer, bootstrap, topic)
        if end is None:
            return registry
        while any([await consumer.position(tp) < end[tp] for tp in end]):
            for records in (await consumer.getmany(timeout_ms=500)).values():
                for record in records:
                    try:
                        registry.add(verified_model(record, key))
                    except Rejected as exc:
                        print(f"trustlayer models: refused ({exc.reason}): {exc.message[:300]}",
                              file=sys.stderr)
    return registry


async def publish_model(bootstrap: str, topic: str, model) -> None:
    from stream.kafka import clients
    from stream.models.registry import encode_model
    from stream.models.signing import model_key, signed_headers

    value = encode_model(model)
    async with clients.producer(bootstrap) as producer:
        await producer.send_and_wait(topic, key=model.task.encode(), value=value,
                                     headers=signed_headers(value, model_key()))


@needs_broker("models history")
def cmd_models_history(args: argparse.Namespace) -> int:
    from stream.kafka.topics import topic_names

    names = topic_names(args.topics)
    registry = asyncio.run(read_models(args.broker, names.models))
    if args.task not in registry.versions:
        known = ", ".join(registry.tasks()) or "none"
        print(f"trustlayer models: no model of task {args.task!r} in {names.models} "
              f"(tasks: {known})", file=sys.stderr)
        return EXIT_BAD_INPUT
    entries = registry.history(args.task)
    if args.format == "json":
        for entry in entries:
            print(json.dumps(entry))
        return EXIT_OK
    for entry in entries:
        when = (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry["ts"]))
                if entry.get("ts") else "-")
        line = f"v{entry['version']}  {entry['action']:<8}  {when}"
        if entry.get("parent") is not None:
            line += f"  from v{entry['parent']}"
        if entry.get("rolled_back_to") is not None:
            line += f"  (body of v{entry['rolled_back_to']})"
        print(line)
        for name in entry.get("added", []):
            print(f"      + {name}")
        for name in entry.get("dropped", []):
            print(f"      - {name}")
        if entry.get("runs"):
            print(f"      runs merged: {', '.join(entry['runs'])}")
    return EXIT_OK


@needs_broker("models rollback")
def cmd_models_rollback(args: argparse.Namespace) -> int:
    from stream.kafka.topics import topic_names

    names = topic_names(args.topics)
    registry = asyncio.run(read_models(args.broker, names.models))
    try:
        model = registry.rollback(args.task, args.version)
    except KeyError as exc:
        print(f"trustlayer models rollback: {exc.args[0]}", file=sys.stderr)
        return EXIT_BAD_INPUT
    asyncio.run(publish_model(args.broker, names.models, model))
    entry = model.history[-1]
    print(f"{args.task}: version {model.version} = version {args.version} "
          f"(added {entry['added'] or 'none'}, dropped {entry['dropped'] or 'none'}) "
          f"published to {names.models}")
    return EXIT_OK


# -- demo -----------------------------------------------------------------------------------
def cmd_demo(args: argparse.Namespace) -> int:
    from stream.commands.demo import run_demo
    return run_demo(args)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the streaming commands to ``trustlayer``'s parser."""
    p = subparsers.add_parser("broker", help="start an embedded Kafka 4.4 (KRaft) on "
                              "127.0.0.1:9092 (--port) and print its address")
    p.add_argument("--libs", help="the broker jars (default: deploy/kafka/fetch.sh's cache)")
    p.add_argument("--keep", action="store_true", help="keep its data and log on exit")
    p.add_argument("--data", metavar="DIR", help="its config, data and log in DIR, kept; "
                   "started again on the topics of a DIR used before")
    p.add_argument("--port", type=int, default=int(DEFAULT_BROKER.rsplit(":", 1)[1]),
                   help="listen on 127.0.0.1:PORT (default 9092, the other commands' default "
                   "--broker; 0: any free port)")
    p.set_defaults(func=cmd_broker)

    p = subparsers.add_parser("worker", help="the streaming validator (a Faust worker)")
    _kafka_options(p)
    p.add_argument("--models", metavar="DIR", help="model files (*.json) to load at start")
    p.add_argument("--train", metavar="DIR", action="append", default=[],
                   help="training runs a refined model is learned from (repeatable)")
    p.add_argument("--images", metavar="DIR",
                   help="screenshots given by path are read from this directory only")
    p.add_argument("--app-id", default="trustlayer-worker",
                   help="Faust app id = consumer group (workers with the same id share runs)")
    p.add_argument("--partitions", type=int, default=4, help="partitions of new topics")
    p.add_argument("--no-refine", action="store_true", help="no online refinement")
    p.add_argument("--refine-on-verdict", action="store_true",
                   help="also refine on runs without an outcome that the validator passed")
    p.add_argument("--drop-after", type=int, metavar="K",
                   help="independent runners whose attested successes must agree before "
                   "refinement drops a milestone or passes what the model fails (default 3)")
    p.add_argument("--decode-budget", type=float, default=5.0, metavar="S",
                   help="seconds a screenshot may take to decode before its run ends as a "
                   "stream fault (default 5)")
    p.add_argument("--shadow-runs", type=int, default=20, metavar="N",
                   help="runs a refined version that changes what the model passes judges in "
                   "shadow before it is used (default 20)")
    p.add_argument("--end-silence", type=float, metavar="S",
                   help="finalise a run without its end event as incomplete after S seconds "
                   "without events (default: from its model's learned durations, >= 30)")
    p.add_argument("--no-deadlines", action="store_true",
                   help="no timer verdicts (deadlines, long states): like the batch validator")
    p.add_argument("--reorder-window", type=int, default=64, metavar="N",
                   help="events held at most while one is missing (default 64)")
    p.add_argument("--reorder-timeout", type=float, default=30.0, metavar="S",
                   help="seconds a missing event is waited for (default 30)")
    p.add_argument("--max-run-events", type=int, default=20_000, metavar="N",
                   help="a run with more events fails with 'run too long' (default 20000; "
                   "with 1 MB of history at most, its record stays under Kafka's 10 MB)")
    p.add_argument("--fetch-buffer", type=float, default=64.0, metavar="MB",
                   help="events fetched and waiting to be judged at most before fetching "
                   "pauses (default 64 MB; and 4096 events)")
    p.add_argument("--metrics-port", type=int, default=9108,
                   help="Prometheus /metrics port (default 9108, 0: off)")
    p.add_argument("--metrics-addr", metavar="ADDR",
                   default=os.environ.get("TRUSTLAYER_METRICS_ADDR", "127.0.0.1"),
                   help="address /metrics listens on (default $TRUSTLAYER_METRICS_ADDR or "
                   "127.0.0.1: this machine only; 0.0.0.0: every interface)")
    p.add_argument("--session-timeout", type=float, default=10.0, metavar="S",
                   help="Kafka group session timeout (default 10 s)")
    p.add_argument("--instance-id", metavar="ID",
                   help="Kafka static group membership (group.instance.id, unique per worker "
                   "of an app id): a worker started again within the session timeout gets its "
                   "partitions back without a rebalance")
    p.add_argument("--stall-restart", type=float, default=30.0, metavar="S",
                   help="start the worker again when a partition's records stay undelivered "
                   "(or its topics unassigned) this long (default 30 s)")
    p.add_argument("--tick", type=float, default=1.0, metavar="S", help="timer period (1 s)")
    p.add_argument("--log-level", default="warning",
                   choices=["debug", "info", "warning", "error"],
                   help="what the worker logs to standard error (default warning)")
    p.set_defaults(func=cmd_worker)

    p = subparsers.add_parser("replay", help="publish recorded runs as runners would")
    p.add_argument("paths", nargs="+", help="trace directories or .jsonl files")
    _kafka_options(p)
    p.add_argument("--speed", type=float, default=1.0,
                   help="time factor (2: twice as fast; 0: as fast as possible)")
    p.add_argument("--stagger", type=float, default=0.0, metavar="S",
                   help="seconds between the runs' starts (default 0: all at once)")
    shots = p.add_mutually_exclusive_group()
    shots.add_argument("--by-reference", dest="screenshots", action="store_const", const="path",
                       default="inline", help="keep screenshot paths (the worker needs "
                       "--images DIR) instead of inlining them as data: URIs")
    shots.add_argument("--fingerprint", dest="screenshots", action="store_const",
                       const="fingerprint", help="send each screenshot's fingerprint instead "
                       "of the image, as a fingerprinting runner would (small events; the "
                       "worker decodes nothing)")
    p.set_defaults(func=cmd_replay)

    p = subparsers.add_parser("verdicts", help="follow the verdict topic")
    _kafka_options(p)
    p.add_argument("--new", action="store_true", help="only verdicts from now on")
    p.add_argument("--final", action="store_true", help="only final verdicts")
    p.add_argument("--format", choices=["text", "json"], default="text",
                   help="text (default): a line per verdict; json: the verdict records")
    p.set_defaults(func=cmd_verdicts)

    p = subparsers.add_parser("models", help="model versions on the models topic")
    sub = p.add_subparsers(dest="models_command", required=True)
    q = sub.add_parser("history", help="every version of a task's model and what changed")
    q.add_argument("task", help="the task whose model it is (the traces' task field)")
    _kafka_options(q)
    q.add_argument("--format", choices=["text", "json"], default="text",
                   help="text (default): a few lines per version; json: one record each")
    q.set_defaults(func=cmd_models_history)
    q = sub.add_parser("rollback", help="publish an old version again as the newest")
    q.add_argument("task", help="the task whose model it is (the traces' task field)")
    q.add_argument("version", type=int, help="the version to publish again (see history)")
    _kafka_options(q)
    q.set_defaults(func=cmd_models_rollback)

    p = subparsers.add_parser("demo", help="embedded Kafka + worker + replay, live verdicts")
    p.add_argument("directory", nargs="?", default=str(REPO_EXAMPLES),
                   help="a trace set with train/ and test/ (default: the repo's "
                   "examples/jupyter)")
    p.add_argument("--once", action="store_true",
                   help="print each run's final verdict once and exit (refinement and timer "
                   "verdicts off: comparable with `trustlayer validate`)")
    p.add_argument("--format", choices=["text", "json"], default="text",
                   help="with --once: a line per run (text, default) or the verdict records")
    p.add_argument("--speed", type=float, help="replay speed (default 1; 0 with --once)")
    p.add_argument("--broker", help="use this Kafka instead of starting an embedded one")
    p.add_argument("--timeout", type=float, default=180.0,
                   help="give up after this many seconds (default 180)")
    p.add_argument("--metrics-port", type=int, default=0,
                   help="the demo worker's /metrics port (default 0: off)")
    p.set_defaults(func=cmd_demo)
    missing = missing_extra()
    if missing:  # the commands stay listed, and say what to install
        for name in ("broker", "worker", "replay", "verdicts", "models", "demo"):
            parser = subparsers.choices[name]
            nested = [action.choices for action in parser._actions
                      if isinstance(action, argparse._SubParsersAction)]
            for command, each in [(name, parser)] + [(f"{name} {inner}", q) for choices in nested
                                                     for inner, q in choices.items()]:
                each.set_defaults(func=needs_extra(command, missing))
