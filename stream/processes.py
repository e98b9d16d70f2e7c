"""Child processes of the service (the broker, workers, learners): free ports for them,
stopping them by their PID, and children that die with the process that started them."""
from __future__ import annotations

import signal
import socket
import subprocess
import sys


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
