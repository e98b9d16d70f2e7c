"""The streaming worker's final verdicts out as OpenTelemetry ``gen_ai.evaluation.result``
events (:mod:`trustlayer.otel.verdicts`): ``trustlayer export-verdicts --endpoint URL``
follows the verdict topic in a consumer group of its own (it resumes where it stopped) and
sends each run's first final verdict over OTLP/HTTP. A process beside the worker, so the
worker's path stays as it is and export stays off unless started."""
from __future__ import annotations

import argparse
import asyncio
from contextlib import aclosing
from typing import Any

from trustlayer.errors import EXIT_OK


async def export_final_verdicts(bootstrap: str, topic: str, exporter: Any, group: str,
                                limit: int | None = None) -> int:
    """Emit the final verdicts of `topic` through `exporter` (a
    :class:`~trustlayer.otel.verdicts.VerdictExporter`), one per run (a final verdict
    the worker sent again, after a restart, is not sent twice by this process), until
    `limit` were sent (None: for ever); returns how many."""
    from stream.commands.console import follow  # Kafka: imported when the command runs

    sent: set[str] = set()
    async with aclosing(follow(bootstrap, topic, True, group)) as records:
        async for record in records:
            if not record.get("final") or record.get("run_id") in sent:
                continue
            exporter.emit(record)
            sent.add(record["run_id"])
            if limit is not None and len(sent) >= limit:
                break
    return len(sent)


def cmd_export_verdicts(args: argparse.Namespace) -> int:
    from stream.kafka.names import topic_names
    from trustlayer.otel.verdicts import VerdictExporter  # the otel extra, only when used

    exporter = VerdictExporter(endpoint=args.endpoint)
    try:
        asyncio.run(export_final_verdicts(args.broker, topic_names(args.topics).verdicts,
                                          exporter, args.group, args.limit))
    except KeyboardInterrupt:
        pass
    finally:
        exporter.close()
    return EXIT_OK


def register(subparsers: Any) -> None:
    """The ``export-verdicts`` command (entry point ``trustlayer.commands``)."""
    from stream.commands.options import kafka_options, missing_extra, needs_broker, needs_extra

    p = subparsers.add_parser("export-verdicts", help="send the worker's final verdicts as "
                              "OpenTelemetry gen_ai.evaluation.result events (OTLP/HTTP)")
    kafka_options(p)
    p.add_argument("--endpoint", required=True,
                   help="OTLP/HTTP logs endpoint, e.g. http://collector:4318/v1/logs")
    p.add_argument("--group", default="trustlayer-verdict-export",
                   help="consumer group (resumes where it stopped)")
    p.add_argument("--limit", type=int, help="stop after this many verdicts")
    missing = missing_extra()
    p.set_defaults(func=needs_extra("export-verdicts", missing) if missing
                   else needs_broker("export-verdicts")(cmd_export_verdicts))
