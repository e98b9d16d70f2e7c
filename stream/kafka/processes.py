"""Child processes of the service (the broker, workers, learners): free ports for them,
stopping them by their PID, children that die with the process that started them, and a
parent that stops them when it is itself stopped by a signal."""
from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def stop_process(proc: subprocess.Popen, timeout: float = 15.0) -> int:
    """Stop a child process by its PID: SIGTERM, then SIGKILL if it is still there after
    `timeout` seconds. Returns its exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """In a child process (before exec, or first thing in a pool worker): on Linux, ask the
    kernel to send `sig` to it when the process that started it dies, even by SIGKILL (no
    orphans). The kernel ties this to the starting thread: start children from a
    long-lived thread."""
    if sys.platform.startswith("linux"):
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, sig)  # PR_SET_PDEATHSIG


@contextmanager
def stopped_as_by_ctrl_c() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP end this process as Ctrl-C does: through the
    ``finally`` blocks that stop its children (the broker, the workers). Their default
    action ends it at once and leaves them running."""
    def leave(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = {signum: signal.signal(signum, leave)
                for signum in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
