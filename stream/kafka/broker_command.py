"""``trustlayer broker``: the embedded Kafka (:class:`stream.kafka.broker.EmbeddedKafka`) as a
command: its address, PID, log and data printed, running until Ctrl+C or SIGTERM; when
Kafka itself dies its data is kept, to start again on with ``--data``."""
from __future__ import annotations

import argparse
import signal
import sys
import time

from stream.kafka.broker import (
    DEFAULT_LIBS,
    KAFKA_VERSION,
    LIBS_ENV,
    BrokerStartError,
    EmbeddedKafka,
    KafkaLibsMissing,
)
from stream.kafka.names import DEFAULT_PORT
from stream.kafka.probe import broker_ready


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``trustlayer broker``."""
    parser.add_argument("--libs", help=f"broker jars (default: ${LIBS_ENV} or {DEFAULT_LIBS})")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (data, log) on exit")
    parser.add_argument("--data", metavar="DIR",
                        help="keep the broker's config, data and log in DIR (made if needed, "
                        "never removed); a DIR used before is started again with its topics")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"listen on 127.0.0.1:PORT (default {DEFAULT_PORT}, the other "
                        "commands' default; 0: a free port)")


def run(args: argparse.Namespace) -> int:
    """`trustlayer broker`: start the embedded Kafka, print its address and PID, run until
    Ctrl+C."""
    try:
        broker = EmbeddedKafka(args.libs, keep_dir=args.keep, port=args.port or None,
                               directory=args.data)
    except KafkaLibsMissing as e:
        print(f"trustlayer broker: {e}", file=sys.stderr)
        return 2
    if args.port and broker_ready(broker.host, args.port):
        print(f"trustlayer broker: a Kafka broker already answers at {broker.host}:{args.port}"
              " (use it, or choose another --port)", file=sys.stderr)
        return 2

    stop = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        with broker:
            print(f"Kafka {KAFKA_VERSION} ready in {broker.startup_seconds:.1f} s", flush=True)
            hint = ("the other commands' default" if broker.port == DEFAULT_PORT
                    else f"pass --broker {broker.bootstrap} to the other commands")
            print(f"bootstrap: {broker.bootstrap}  ({hint})", flush=True)
            print(f"pid: {broker.pid}", flush=True)
            print(f"log: {broker.log_file}", flush=True)
            print(f"data: {broker.dir}", flush=True)
            print("Ctrl+C to stop", flush=True)
            proc = broker.proc
            assert proc is not None, "started by `with broker`"
            while proc.poll() is None:
                time.sleep(0.5)
            broker.keep_dir = True  # a crash: its data stays, to start again on
            print(f"trustlayer broker: the Kafka process exited (code {proc.returncode})"
                  f"; its data is kept: start it again with `trustlayer broker --data "
                  f"{broker.dir}`", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        print("stopping", flush=True)
        return 0
    except BrokerStartError as e:
        print(f"trustlayer broker: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, stop)
