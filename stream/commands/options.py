"""What the streaming commands share: the Kafka options (``--broker``, ``--topics``), the
check that a broker answers before a command runs, and the one line a command prints when
the ``[stream]`` extra is not installed."""
from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import sys
from collections.abc import Callable

from stream.kafka.names import DEFAULT_BROKER
from trustlayer.errors import EXIT_BAD_INPUT

EXTRA_MODULES = ("faust", "aiokafka", "prometheus_client")  # what `[stream]` installs


def kafka_options(parser: argparse.ArgumentParser) -> None:
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
