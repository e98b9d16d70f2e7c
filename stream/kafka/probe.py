"""Is a Kafka broker there? One Metadata request in plain Kafka protocol (no client
library), and the one line a command prints when none answers."""
from __future__ import annotations

import socket
import struct

COMPOSE_BROKER = "127.0.0.1:9094"  # docker-compose.yml's Kafka, from the host


def broker_ready(host: str, port: int, timeout: float = 1.0) -> bool:
    """True once the broker answers a Metadata request listing at least one broker."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            client_id = b"trustlayer-ready"
            # Request header v1 + Metadata v8 body (the last non-flexible version; v4+ is kept
            # in 4.x): topics=null (all), allow_auto_topic_creation=false, no authorized-operations.
            body = struct.pack(">hhih", 3, 8, 1, len(client_id)) + client_id
            body += struct.pack(">i???", -1, False, False, False)
            sock.sendall(struct.pack(">i", len(body)) + body)
            head = _recv_exact(sock, 4)
            (size,) = struct.unpack(">i", head)
            payload = _recv_exact(sock, size)
            # correlation_id int32, throttle_time_ms int32, brokers array length int32
            correlation, _throttle, n_brokers = struct.unpack_from(">iii", payload, 0)
            return correlation == 1 and n_brokers >= 1
    except (OSError, struct.error):
        return False


def broker_problem(bootstrap: str, command: str) -> str | None:
    """None if a Kafka broker answers at `bootstrap` (``HOST:PORT[,HOST:PORT...]``), else
    the one line `command` prints: the address and how to start a broker."""
    for address in bootstrap.split(","):
        host, _, port = address.strip().rpartition(":")
        if host and port.isdigit() and broker_ready(host.strip("[]"), int(port), timeout=3.0):
            return None
    port = bootstrap.rpartition(":")[2]
    start = f"trustlayer broker --port {port}" if port.isdigit() else "trustlayer broker"
    return (f"{command}: no Kafka broker answers at {bootstrap}: start one with `{start}`, "
            f"or pass --broker HOST:PORT (`docker compose up` publishes its Kafka at "
            f"--broker {COMPOSE_BROKER})")


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return bytes(buf)
