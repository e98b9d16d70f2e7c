"""``trustlayer models history|show|rollback|release``: the versions of a task's model on the
models topic, the version in use with the runs a rollback quarantined, an old version
published again as the newest (signed), and quarantined runs released."""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from stream.commands.options import kafka_options, needs_broker
from trustlayer.errors import EXIT_BAD_INPUT, EXIT_OK


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
    from stream.kafka.names import topic_names

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
        for label, key in (("runs merged", "runs"), ("quarantined", "quarantined"),
                           ("released", "released"), ("changes", "changes")):
            if entry.get(key):
                print(f"      {label}: {', '.join(entry[key])}")
    return EXIT_OK


@needs_broker("models show")
def cmd_models_show(args: argparse.Namespace) -> int:
    from stream.kafka.names import topic_names

    names = topic_names(args.topics)
    registry = asyncio.run(read_models(args.broker, names.models))
    latest, trial = registry.latest(args.task), registry.shadow(args.task)
    if latest is None:
        known = ", ".join(registry.tasks()) or "none"
        print(f"trustlayer models: no model of task {args.task!r} in {names.models} "
              f"(tasks: {known})", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"{args.task}: version {latest.version} in use, learned from "
          f"{len(latest.training_runs)} runs: {', '.join(latest.training_runs)}")
    print("milestones: " + ", ".join(latest.name(sid) for sid in latest.essential))
    if trial is not None:
        print(f"version {trial.version} on trial in shadow")
    quarantined = registry.quarantined(args.task)
    print(f"quarantined runs: {len(quarantined) or 'none'}")
    for run_id, version in sorted(quarantined.items()):
        print(f"      {run_id}  (by the rollback of version {version})")
    return EXIT_OK


def _publish_change(args: argparse.Namespace, change) -> int:
    """Publish the version `change(registry)` makes from the models topic's versions."""
    from stream.kafka.names import topic_names

    names = topic_names(args.topics)
    registry = asyncio.run(read_models(args.broker, names.models))
    try:
        model = change(registry)
    except KeyError as exc:
        print(f"trustlayer models {args.models_command}: {exc.args[0]}", file=sys.stderr)
        return EXIT_BAD_INPUT
    asyncio.run(publish_model(args.broker, names.models, model))
    entry = model.history[-1]
    if entry["action"] == "released":
        print(f"{args.task}: version {model.version} releases {', '.join(entry['released'])} "
              f"published to {names.models}")
        return EXIT_OK
    print(f"{args.task}: version {model.version} = version {args.version} "
          f"(added {entry['added'] or 'none'}, dropped {entry['dropped'] or 'none'}, "
          f"quarantined runs {', '.join(entry.get('quarantined', [])) or 'none'}) "
          f"published to {names.models}")
    return EXIT_OK


@needs_broker("models rollback")
def cmd_models_rollback(args: argparse.Namespace) -> int:
    return _publish_change(args, lambda registry: registry.rollback(args.task, args.version))


@needs_broker("models release")
def cmd_models_release(args: argparse.Namespace) -> int:
    return _publish_change(args, lambda registry: registry.release(args.task, args.runs))


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``models history|show|rollback|release`` to the ``trustlayer`` commands."""
    p = subparsers.add_parser("models", help="model versions on the models topic")
    sub = p.add_subparsers(dest="models_command", required=True)
    q = sub.add_parser("history", help="every version of a task's model and what changed")
    q.add_argument("task", help="the task whose model it is (the traces' task field)")
    kafka_options(q)
    q.add_argument("--format", choices=["text", "json"], default="text",
                   help="text (default): a few lines per version; json: one record each")
    q.set_defaults(func=cmd_models_history)
    q = sub.add_parser("show", help="the version in use and the runs a rollback quarantined")
    q.add_argument("task", help="the task whose model it is (the traces' task field)")
    kafka_options(q)
    q.set_defaults(func=cmd_models_show)
    q = sub.add_parser("rollback", help="publish an old version again as the newest; the "
                       "runs merged since are quarantined")
    q.add_argument("task", help="the task whose model it is (the traces' task field)")
    q.add_argument("version", type=int, help="the version to publish again (see history)")
    kafka_options(q)
    q.set_defaults(func=cmd_models_rollback)
    q = sub.add_parser("release", help="let refinement learn from quarantined runs again")
    q.add_argument("task", help="the task whose model it is (the traces' task field)")
    q.add_argument("runs", nargs="+", help="run ids quarantined by a rollback (see show)")
    kafka_options(q)
    q.set_defaults(func=cmd_models_release)
