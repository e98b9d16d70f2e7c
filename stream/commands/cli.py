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
import json
import os
import sys
from pathlib import Path

from stream.commands import models
from stream.commands.options import kafka_options, missing_extra, needs_broker, needs_extra
from stream.kafka import broker_command
from stream.kafka.names import DEFAULT_PORT
from stream.worker.config import WorkerConfig
from trustlayer.cli_table import Command, add_commands, option
from trustlayer.errors import EXIT_BAD_INPUT, EXIT_OK
from trustlayer.show.escape import escape_log_records

#: The worker's defaults, which its options show and take (the one place they are set).
WORKER = WorkerConfig()
RUNS = WORKER.settings
REPO_EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "jupyter"


# -- worker ---------------------------------------------------------------------------------
def worker_config(args: argparse.Namespace):
    from stream.judging.settings import WorkerSettings
    from stream.kafka.names import topic_names
    from stream.models.attest import runner_keys

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

    from stream.models.attest import runner_keys
    from stream.worker.internals import untested
    from stream.worker.supervise import child_stalls, supervise

    if problem := untested():
        print(f"trustlayer worker: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.models and not Path(args.models).is_dir():
        print(f"trustlayer worker: --models {args.models}: no such directory", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not args.no_refine:
        runner_keys()  # unreadable keys, or keys shared by runners: one line, before starting
    stalls = child_stalls()
    if stalls is None:  # this process supervises; the worker runs in its child
        command = [sys.executable, "-m", "trustlayer.cli", *sys.argv[1:]]
        return needs_broker("worker")(lambda _: supervise(command))(args)
    from stream.worker.app import run_worker

    escape_log_records()  # a run id in a log message cannot start a line of its own
    logging.getLogger("trustlayer").setLevel(args.log_level.upper())
    logging.getLogger("stream").setLevel(args.log_level.upper())
    return run_worker(worker_config(args), loglevel=args.log_level, stalls=stalls)


# -- replay ---------------------------------------------------------------------------------
@needs_broker("replay")
def cmd_replay(args: argparse.Namespace) -> int:
    from stream.commands.replay import replay
    from stream.kafka.names import topic_names
    from stream.kafka.topics import ensure_topics

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
    from stream.kafka.names import topic_names

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


# -- demo -----------------------------------------------------------------------------------
def cmd_demo(args: argparse.Namespace) -> int:
    from stream.commands.demo import run_demo
    return run_demo(args)


def _metrics_addr(command: argparse.ArgumentParser) -> None:
    """``--metrics-addr``, its default read from the environment when the parser is built."""
    command.add_argument("--metrics-addr", metavar="ADDR",
                         default=os.environ.get("TRUSTLAYER_METRICS_ADDR", WORKER.metrics_addr),
                         help="address /metrics listens on (default $TRUSTLAYER_METRICS_ADDR or "
                         f"{WORKER.metrics_addr}: this machine only; 0.0.0.0: every interface)")


def _screenshot_form(command: argparse.ArgumentParser) -> None:
    """How replay sends screenshots: inline (default), by path or as fingerprints."""
    shots = command.add_mutually_exclusive_group()
    shots.add_argument("--by-reference", dest="screenshots", action="store_const", const="path",
                       default="inline", help="keep screenshot paths (the worker needs "
                       "--images DIR) instead of inlining them as data: URIs")
    shots.add_argument("--fingerprint", dest="screenshots", action="store_const",
                       const="fingerprint", help="send each screenshot's fingerprint instead "
                       "of the image, as a fingerprinting runner would (small events; the "
                       "worker decodes nothing)")


BROKER = Command("broker", broker_command.run, [broker_command.add_arguments], dict(
    help=f"start an embedded Kafka 4.4 (KRaft) on 127.0.0.1:{DEFAULT_PORT} (--port) and print "
    "its address"))

WORKER_COMMAND = Command("worker", cmd_worker, [
    kafka_options,
    option("--models", metavar="DIR", help="model files (*.json) to load at start"),
    option("--train", metavar="DIR", action="append", default=[],
           help="training runs a refined model is learned from (repeatable)"),
    option("--images", metavar="DIR",
           help="screenshots given by path are read from this directory only"),
    option("--app-id", default=WORKER.app_id,
           help="Faust app id = consumer group (workers with the same id share runs)"),
    option("--partitions", type=int, default=WORKER.partitions, help="partitions of new topics"),
    option("--no-refine", action="store_true", help="no online refinement"),
    option("--refine-on-verdict", action="store_true",
           help="also refine on runs without an outcome that the validator passed"),
    option("--drop-after", type=int, metavar="K",
           help="independent runners whose attested successes must agree before refinement "
           "drops a milestone or passes what the model fails (default 3)"),
    option("--decode-budget", type=float, default=RUNS.decode_budget, metavar="S",
           help="seconds a screenshot may take to decode before its run ends as a stream fault "
           f"(default {RUNS.decode_budget:g})"),
    option("--shadow-runs", type=int, default=RUNS.shadow_runs, metavar="N",
           help="runs a refined version that changes what the model passes judges in shadow "
           f"before it is used (default {RUNS.shadow_runs})"),
    option("--end-silence", type=float, metavar="S",
           help="finalise a run without its end event as incomplete after S seconds without "
           "events (default: from its model's learned durations, >= 30)"),
    option("--no-deadlines", action="store_true",
           help="no timer verdicts (deadlines, long states): like the batch validator"),
    option("--reorder-window", type=int, default=RUNS.reorder_window, metavar="N",
           help=f"events held at most while one is missing (default {RUNS.reorder_window})"),
    option("--reorder-timeout", type=float, default=RUNS.reorder_timeout, metavar="S",
           help=f"seconds a missing event is waited for (default {RUNS.reorder_timeout:g})"),
    option("--max-run-events", type=int, default=RUNS.max_run_events, metavar="N",
           help=f"a run with more events fails with 'run too long' (default "
           f"{RUNS.max_run_events}; with 1 MB of history at most, its record stays under "
           "Kafka's 10 MB)"),
    option("--fetch-buffer", type=float, default=WORKER.fetch_buffer_bytes / 2**20,
           metavar="MB", help="events fetched and waiting to be judged at most before fetching "
           f"pauses (default {WORKER.fetch_buffer_bytes / 2**20:g} MB; and 4096 events)"),
    option("--metrics-port", type=int, default=WORKER.metrics_port,
           help=f"Prometheus /metrics port (default {WORKER.metrics_port}, 0: off)"),
    _metrics_addr,
    option("--session-timeout", type=float, default=WORKER.session_timeout, metavar="S",
           help=f"Kafka group session timeout (default {WORKER.session_timeout:g} s)"),
    option("--instance-id", metavar="ID",
           help="Kafka static group membership (group.instance.id, unique per worker of an "
           "app id): a worker started again within the session timeout gets its partitions "
           "back without a rebalance"),
    option("--stall-restart", type=float, default=WORKER.stall_restart, metavar="S",
           help="start the worker again when a partition's records stay undelivered (or its "
           f"topics unassigned) this long (default {WORKER.stall_restart:g} s)"),
    option("--tick", type=float, default=WORKER.tick_interval, metavar="S",
           help=f"timer period ({WORKER.tick_interval:g} s)"),
    option("--log-level", default="warning", choices=["debug", "info", "warning", "error"],
           help="what the worker logs to standard error (default warning)"),
], dict(help="the streaming validator (a Faust worker)"))

REPLAY = Command("replay", cmd_replay, [
    option("paths", nargs="+", help="trace directories or .jsonl files"),
    kafka_options,
    option("--speed", type=float, default=1.0,
           help="time factor (2: twice as fast; 0: as fast as possible)"),
    option("--stagger", type=float, default=0.0, metavar="S",
           help="seconds between the runs' starts (default 0: all at once)"),
    _screenshot_form,
], dict(help="publish recorded runs as runners would"))

VERDICTS = Command("verdicts", cmd_verdicts, [
    kafka_options,
    option("--new", action="store_true", help="only verdicts from now on"),
    option("--final", action="store_true", help="only final verdicts"),
    option("--format", choices=["text", "json"], default="text",
           help="text (default): a line per verdict; json: the verdict records"),
], dict(help="follow the verdict topic"))

DEMO = Command("demo", cmd_demo, [
    option("directory", nargs="?", default=str(REPO_EXAMPLES),
           help="a trace set with train/ and test/ (default: the repo's examples/jupyter)"),
    option("--once", action="store_true",
           help="print each run's final verdict once and exit (refinement and timer verdicts "
           "off: comparable with `trustlayer validate`)"),
    option("--format", choices=["text", "json"], default="text",
           help="with --once: a line per run (text, default) or the verdict records"),
    option("--speed", type=float, help="replay speed (default 1; 0 with --once)"),
    option("--broker", help="use this Kafka instead of starting an embedded one"),
    option("--timeout", type=float, default=180.0,
           help="give up after this many seconds (default 180)"),
    option("--metrics-port", type=int, default=0,
           help="the demo worker's /metrics port (default 0: off)"),
], dict(help="embedded Kafka + worker + replay, live verdicts"))


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the streaming commands to ``trustlayer``'s parser."""
    add_commands(subparsers, [BROKER, WORKER_COMMAND, REPLAY, VERDICTS])
    models.register(subparsers)
    add_commands(subparsers, [DEMO])
    missing = missing_extra()
    if missing:  # the commands stay listed, and say what to install
        _refuse_without(missing, subparsers)


def _refuse_without(missing: list[str], subparsers: argparse._SubParsersAction) -> None:
    """Make every streaming command, and each of its own subcommands, say what to install."""
    for name in ("broker", "worker", "replay", "verdicts", "models", "demo"):
        parser = subparsers.choices[name]
        nested = [action.choices for action in parser._actions
                  if isinstance(action, argparse._SubParsersAction)]
        for command, each in [(name, parser)] + [(f"{name} {inner}", q) for choices in nested
                                                 for inner, q in choices.items()]:
            each.set_defaults(func=needs_extra(command, missing))
