"""The worker's supervisor with real child processes, and the streaming commands without a
broker (one line naming the address, exit code 2)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from stream.kafka.processes import free_port, stop_process
from stream.worker.supervise import CHILD_ENV, RESTART, STOP_WITHIN, STOPPED_HARD, supervise

#: a child that asks for a restart twice (as a stalled worker does), then ends for good (2)
STALLS_TWICE = (f"import os, sys; n = int(os.environ['{CHILD_ENV}']); "
                "print('child', n, flush=True); "
                f"sys.exit({RESTART} if n < 2 else 2)")


def test_a_stalled_child_is_started_again_and_knows_the_stalls_before_it(capfd):
    assert supervise([sys.executable, "-c", STALLS_TWICE]) == 2
    out, err = capfd.readouterr()
    assert out.split() == ["child", "0", "child", "1", "child", "2"]
    assert "restarting after a stall (2 so far)" in err


def test_a_child_with_bad_input_is_not_started_again(capfd):
    assert supervise([sys.executable, "-c", "print('once'); raise SystemExit(2)"]) == 2
    assert capfd.readouterr().out.split() == ["once"]


def test_a_child_stopped_alone_is_started_again():
    """SIGTERM to the Faust worker's PID only (the supervisor was not told to stop): the
    worker is started again instead of the whole command ending (issue 29)."""
    code = ("import os, signal, sys, time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(0));"
            f" print(os.getpid(), os.environ['{CHILD_ENV}'], flush=True); time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", "import sys; "
                               "from stream.worker.supervise import "
                               f"supervise; sys.exit(supervise([sys.executable, '-c', {code!r}]))"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = int(parent.stdout.readline().split()[0])
        os.kill(first, signal.SIGTERM)
        second = int(parent.stdout.readline().split()[0])
        assert second != first and parent.poll() is None
        parent.terminate()  # the command itself told to stop: it ends, with the child's code
        assert parent.wait(timeout=20) == 0
        assert "the worker was stopped, but not this command," in parent.stderr.read()
    finally:
        parent.kill()


def test_sigterm_reaches_the_child_and_ends_the_supervisor():
    """`trustlayer worker` stopped by SIGTERM (docker stop, the demo): the child gets it."""
    code = ("import signal, sys, time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(0)); "
            "print('up', flush=True); time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", "import sys; "
                               "from stream.worker.supervise import "
                               f"supervise; sys.exit(supervise([sys.executable, '-c', {code!r}]))"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout.readline().strip() == "up"
        parent.terminate()
        assert parent.wait(timeout=20) == 0
    finally:
        parent.kill()


def test_a_worker_that_does_not_stop_is_killed_and_the_command_says_what_is_left():
    """A child whose shutdown hangs (a Faust worker committing to a broker that is gone)
    is killed STOP_WITHIN seconds after SIGTERM; the command says what it could not do."""
    code = ("import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print(os.getpid(), flush=True); time.sleep(120)")
    parent = subprocess.Popen([sys.executable, "-c", "import sys; "
                               "from stream.worker.supervise import "
                               f"supervise; sys.exit(supervise([sys.executable, '-c', {code!r}]))"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        parent.terminate()
        assert parent.wait(timeout=60) == STOPPED_HARD
        with pytest.raises(ProcessLookupError):
            os.kill(child, 0)
        err = parent.stderr.read()
        assert f"did not stop within {STOP_WITHIN:.0f} s" in err
        assert "could not commit what it judged since its last commit" in err
    finally:
        parent.kill()


#: a parent (as the benchmarks are) with a child it stops in a ``finally``
STOPS_ITS_CHILD = """
import subprocess, sys, time
from stream.kafka.processes import stop_process, stopped_as_by_ctrl_c
with stopped_as_by_ctrl_c():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        print(child.pid, flush=True)
        time.sleep(120)
    finally:
        stop_process(child)
        print("stopped", child.returncode, flush=True)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_parent_stopped_by_a_signal_stops_its_children_as_on_ctrl_c(signum):
    """A benchmark or the demo killed (``kill``, a closed terminal) stops its broker and
    workers on the way out instead of leaving them running."""
    parent = subprocess.Popen([sys.executable, "-c", STOPS_ITS_CHILD], stdout=subprocess.PIPE,
                              text=True)
    try:
        child = int(parent.stdout.readline())
        parent.send_signal(signum)
        assert parent.wait(timeout=30) == 128 + signum
        assert parent.stdout.read().split() == ["stopped", str(-signal.SIGTERM)]
        with pytest.raises(ProcessLookupError):
            os.kill(child, 0)
    finally:
        parent.kill()


@pytest.mark.parametrize("command", [["worker"], ["verdicts"], ["replay", "examples/jupyter/test"],
                                     ["models", "history", "t"], ["models", "rollback", "t", "1"],
                                     ["models", "show", "t"], ["models", "release", "t", "r"],
                                     ["demo", "--once"]])
def test_every_streaming_command_without_a_broker_says_so_in_one_line(command):
    address = f"127.0.0.1:{free_port()}"
    run = subprocess.run([sys.executable, "-m", "trustlayer.cli", *command, "--broker", address],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    [line] = run.stderr.splitlines()
    name = " ".join(command[:2] if command[0] == "models" else command[:1])
    assert line.startswith(f"trustlayer {name}: no Kafka broker answers at {address}"), line
    assert f"trustlayer broker --port {address.rsplit(':', 1)[1]}" in line


def test_trustlayer_broker_listens_on_the_port_it_is_given(kafka):
    """`trustlayer broker --port P` prints the address to pass; a port where a broker
    already answers is refused in one line."""
    taken = subprocess.run([sys.executable, "-m", "trustlayer.cli", "broker", "--port",
                            str(kafka.port)], capture_output=True, text=True, timeout=60)
    assert taken.returncode == 2
    assert taken.stderr.strip() == (f"trustlayer broker: a Kafka broker already answers at "
                                    f"{kafka.bootstrap} (use it, or choose another --port)")
    port = free_port()
    broker = subprocess.Popen([sys.executable, "-m", "trustlayer.cli", "broker", "--port",
                               str(port)], stdout=subprocess.PIPE, text=True)
    try:
        lines = [broker.stdout.readline() for _ in range(2)]
        assert lines[1].strip() == (f"bootstrap: 127.0.0.1:{port}  (pass --broker "
                                    f"127.0.0.1:{port} to the other commands)"), lines
        history = subprocess.run([sys.executable, "-m", "trustlayer.cli", "models", "history",
                                  "t", "--broker", f"127.0.0.1:{port}"],
                                 capture_output=True, text=True, timeout=60)
        assert history.returncode == 2 and "no model of task 't'" in history.stderr
    finally:
        stop_process(broker)
