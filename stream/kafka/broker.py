"""A real one-node Apache Kafka (KRaft, broker+controller in one process) for tests and the demo.

The jars come from Maven Central through ``deploy/kafka/fetch.sh``; this module only runs them
on the machine's Java (17+)::

    with EmbeddedKafka() as kafka:
        print(kafka.bootstrap)        # "127.0.0.1:PORT"

Each instance gets a fresh temporary directory (server.properties, log4j2 config, data, log)
or the `directory` it is given, free ports on 127.0.0.1, and is stopped by its PID (SIGTERM,
then SIGKILL after a timeout). Storage already formatted there (``data/meta.properties``)
is used again with its cluster id: a broker started on the directory of one that died has
its topics and records. A given directory is never removed. The code speaks plain Kafka
protocol only.
"""

from __future__ import annotations

import atexit
import base64
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from stream.kafka.probe import broker_ready
from stream.kafka.processes import die_with_parent, free_port, stop_process

KAFKA_VERSION = "4.4.0"
LIBS_ENV = "TRUSTLAYER_KAFKA_LIBS"
DEFAULT_LIBS = Path.home() / ".cache" / "trustlayer" / f"kafka-{KAFKA_VERSION}" / "libs"
KAFKA_MAIN = "kafka.Kafka"
STORAGE_TOOL_MAIN = "kafka.tools.StorageTool"
MESSAGE_MAX_BYTES = 10 * 1024 * 1024

_REPO_ROOT = Path(__file__).resolve().parents[2]  # stream/kafka/broker.py
FETCH_HINT = (
    f"run `deploy/kafka/fetch.sh` (in {_REPO_ROOT}) to fetch the Kafka {KAFKA_VERSION} jars "
    f"from Maven Central, or point {LIBS_ENV} at a directory holding them"
)


class KafkaLibsMissing(RuntimeError):
    """The broker jars are not there: ``deploy/kafka/fetch.sh`` fetches them."""


class BrokerStartError(RuntimeError):
    """The broker process exited or did not become ready in time."""


def find_libs(libs: str | os.PathLike[str] | None = None) -> Path:
    """The directory holding the broker's jars: *libs*, ``$TRUSTLAYER_KAFKA_LIBS`` or the cache."""
    chosen = Path(libs or os.environ.get(LIBS_ENV) or DEFAULT_LIBS).expanduser()
    if not chosen.is_dir() or not any(chosen.glob("kafka_2.13-*.jar")):
        raise KafkaLibsMissing(f"no Kafka broker jars in {chosen}: {FETCH_HINT}")
    return chosen


def find_java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    java = shutil.which("java")
    if not java:
        raise BrokerStartError("no `java` on PATH (Kafka 4.x needs Java 17+): "
                               "apt-get install -y openjdk-17-jre-headless")
    return java


def new_cluster_id() -> str:
    """A random cluster id as Kafka writes one (Uuid: 16 bytes, URL-safe base64, no padding)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):  # Kafka's Uuid.randomUuid() avoids these too (CLI parsing)
            return cid


_LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.file.ref = FILE
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


class EmbeddedKafka:
    """A one-node KRaft Kafka (combined broker+controller) on free 127.0.0.1 ports.

    Use as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    _running: set[EmbeddedKafka] = set()

    def __init__(
        self,
        libs: str | os.PathLike[str] | None = None,
        *,
        overrides: Mapping[str, object] | None = None,
        heap: str = "512m",
        start_timeout: float = 60.0,
        stop_timeout: float = 10.0,
        log_level: str = "INFO",
        keep_dir: bool = False,
        port: int | None = None,
        directory: str | os.PathLike[str] | None = None,
    ) -> None:
        self.libs = find_libs(libs)
        self.fixed_port = port
        self.overrides = dict(overrides or {})
        self.heap = heap
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.log_level = log_level
        self.given_dir = Path(directory).resolve() if directory is not None else None
        self.keep_dir = keep_dir or directory is not None
        self.host = "127.0.0.1"
        self.port: int | None = None
        self.controller_port: int | None = None
        self.cluster_id: str | None = None
        self.dir: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.startup_seconds: float | None = None

    # -- public ---------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        if self.port is None:
            raise RuntimeError("broker not started")
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def log_file(self) -> Path | None:
        return self.dir / "broker.log" if self.dir else None

    @property
    def data(self) -> Path:
        """The broker's storage (``log.dirs``)."""
        if self.dir is None:
            raise RuntimeError("broker not started")
        return self.dir / "data"

    def start(self) -> EmbeddedKafka:
        if self.proc is not None:
            raise RuntimeError("broker already started")
        t0 = time.monotonic()
        if self.given_dir is not None:
            self.given_dir.mkdir(parents=True, exist_ok=True)
            self.dir = self.given_dir
        else:
            self.dir = Path(tempfile.mkdtemp(prefix="trustlayer-kafka-"))
        try:
            for _ in range(3):  # a free port can be taken between probe and bind: retry
                self.port, self.controller_port = self.fixed_port or free_port(), free_port()
                while self.controller_port == self.port:
                    self.controller_port = free_port()
                props = self._write_config(self.data)
                self.cluster_id = self._formatted_cluster_id()
                if self.cluster_id is None:
                    self.cluster_id = new_cluster_id()
                    self._format(props)
                self._launch(props)
                if self._wait_ready(t0):
                    break
                tail = self._log_tail()
                self._kill()
                if self.fixed_port and "Address already in use" in tail:
                    raise BrokerStartError(f"port {self.fixed_port} is in use on {self.host}: "
                                           "choose another with --port")
                if "Address already in use" not in tail:
                    raise BrokerStartError(f"Kafka exited while starting\n{tail}")
                # a port was taken between the probe and the broker's bind: fresh ports
            else:
                raise BrokerStartError(f"Kafka did not start after 3 tries\n{self._log_tail()}")
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        EmbeddedKafka._running.add(self)
        return self

    def stop(self) -> None:
        """Stop the broker by its PID (SIGTERM, then SIGKILL) and remove its temp dir."""
        self._kill()
        EmbeddedKafka._running.discard(self)
        if self.dir is not None and not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def kill(self) -> None:
        """Kill the broker hard (SIGKILL), keeping its data: a crash, for fault tests."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()

    def restart(self) -> None:
        """Start the broker again on the same ports and data (after :meth:`kill`)."""
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError("broker still running")
        assert self.dir is not None
        self._launch(self.dir / "server.properties")
        if not self._wait_ready(time.monotonic()):
            raise BrokerStartError(f"Kafka did not restart\n{self._log_tail()}")

    def __enter__(self) -> EmbeddedKafka:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"{self.bootstrap} pid={self.pid}" if self.proc else "stopped"
        return f"<EmbeddedKafka {KAFKA_VERSION} {state}>"

    # -- internals --------------------------------------------------------------------------
    def properties(self, data: Path) -> dict[str, object]:
        b, c = self.port, self.controller_port
        props: dict[str, object] = {
            "process.roles": "broker,controller",
            "node.id": 1,
            "controller.quorum.voters": f"1@{self.host}:{c}",
            "listeners": f"PLAINTEXT://{self.host}:{b},CONTROLLER://{self.host}:{c}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{b}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(data),
            # topics are created explicitly, with their partition counts
            "auto.create.topics.enable": "false",
            "num.partitions": 1,
            "default.replication.factor": 1,
            "min.insync.replicas": 1,
            # internal topics on one node, few partitions so they come up fast
            "offsets.topic.replication.factor": 1,
            "offsets.topic.num.partitions": 4,
            "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "transaction.state.log.num.partitions": 4,
            "share.coordinator.state.topic.replication.factor": 1,
            "share.coordinator.state.topic.min.isr": 1,
            # consumer groups: no initial delay, short session timeouts allowed in tests
            "group.initial.rebalance.delay.ms": 0,
            "group.min.session.timeout.ms": 500,
            # screenshots may travel inline
            "message.max.bytes": MESSAGE_MAX_BYTES,
            "replica.fetch.max.bytes": MESSAGE_MAX_BYTES,
            # short segments and a quick cleaner (the models topic is compacted)
            "log.segment.bytes": 16 * 1024 * 1024,
            "log.index.size.max.bytes": 1024 * 1024,
            "log.segment.delete.delay.ms": 1000,
            "log.retention.check.interval.ms": 10000,
            "log.cleaner.backoff.ms": 1000,
            "log.cleaner.threads": 1,
            "log.cleaner.dedupe.buffer.size": 8 * 1024 * 1024,
            # a small machine
            "num.network.threads": 2,
            "num.io.threads": 4,
            "background.threads": 2,
            "num.recovery.threads.per.data.dir": 1,
        }
        props.update(self.overrides)
        return props

    def _write_config(self, data: Path) -> Path:
        assert self.dir is not None
        props = self.dir / "server.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in self.properties(data).items()))
        (self.dir / "log4j2.properties").write_text(
            _LOG4J2.format(log=self.dir / "broker.log", level=self.log_level)
        )
        return props

    def _java(self, main: str, *args: str) -> list[str]:
        assert self.dir is not None
        return [
            find_java(),
            f"-Xmx{self.heap}",
            "-Xms64m",
            "-XX:+UseG1GC",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.dir}",
            "-cp",
            f"{self.libs}/*",
            main,
            *args,
        ]

    def _formatted_cluster_id(self) -> str | None:
        """The cluster id of storage formatted before in the data directory, or None."""
        meta = self.data / "meta.properties"
        if not meta.is_file():
            return None
        for line in meta.read_text().splitlines():
            name, _, value = line.partition("=")
            if name.strip() == "cluster.id" and value.strip():
                return value.strip()
        raise BrokerStartError(f"{meta} has no cluster.id: not a Kafka data directory")

    def _format(self, props: Path) -> None:
        assert self.cluster_id is not None
        cmd = self._java(STORAGE_TOOL_MAIN, "format", "-t", self.cluster_id, "-c", str(props))
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if res.returncode != 0:
            raise BrokerStartError(
                f"formatting the Kafka storage failed ({' '.join(cmd)}):\n{res.stdout}{res.stderr}"
            )

    def _launch(self, props: Path) -> None:
        assert self.dir is not None
        out = open(self.dir / "broker.out", "ab")
        try:
            self.proc = subprocess.Popen(
                self._java(KAFKA_MAIN, str(props)),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl+C in a terminal reaches us, and we stop it
                preexec_fn=die_with_parent,
            )
        finally:
            out.close()

    def _wait_ready(self, t0: float) -> bool:
        assert self.proc is not None and self.port is not None
        while time.monotonic() - t0 < self.start_timeout:
            if self.proc.poll() is not None:
                return False
            if broker_ready(self.host, self.port):
                return True
            time.sleep(0.1)
        raise BrokerStartError(
            f"Kafka not ready on {self.bootstrap} after {self.start_timeout:.0f} s\n"
            f"{self._log_tail()}"
        )

    def _kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            stop_process(proc, self.stop_timeout)

    def _log_tail(self, lines: int = 40) -> str:
        text = []
        for name in ("broker.out", "broker.log"):
            p = self.dir / name if self.dir else None
            if p and p.exists():
                tail = p.read_text(errors="replace").splitlines()[-lines:]
                text.append(f"--- {p} (last {len(tail)} lines)\n" + "\n".join(tail))
        return "\n".join(text)


@atexit.register
def _stop_all() -> None:
    for broker in list(EmbeddedKafka._running):
        broker.stop()
