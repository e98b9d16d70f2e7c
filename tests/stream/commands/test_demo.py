"""`trustlayer demo`: its screen (expected beside actual verdicts, full reasons, a legend,
the next step) and its end on SIGTERM, which takes its worker with it."""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time

import pytest
from rich.console import Console
from streamkit import EXAMPLES

from stream.commands.demo import next_step
from stream.commands.screen import Screen, expected_label

LONG_REASON = ("'untitled.txt - JupyterLab: Saving completed' never reached after 'Cancel': "
               "the product showed a state never seen in successful runs (Error Permission "
               "denied), the end of this sentence is well past ninety characters")


def test_expected_labels_read_as_the_screen_shows_them():
    assert expected_label({"outcome": "success", "cause": None}) == ("pass", "passed")
    assert expected_label({"outcome": "failure", "cause": "agent_error"}) == \
        ("fail · agent error", "failed")
    assert expected_label(None) == ("—", None)


def judged_screen() -> Screen:
    """Four runs: a pass, a product bug with a long reason, a pass judged a failure, and
    one still open."""
    labels = {"r-pass": {"outcome": "success", "cause": None},
              "r-fail": {"outcome": "failure", "cause": "product_bug"},
              "r-wrong": {"outcome": "success", "cause": None}}
    screen = Screen(list(labels) + ["r-open"], labels, "demo")
    base = {"model_version": 1, "final": True, "cause": None, "detected_at_seq": 9}
    screen.update({**base, "run_id": "r-pass", "status": "passed", "coverage": 1.0,
                   "reason": "every essential milestone reached"})
    screen.update({**base, "run_id": "r-fail", "status": "failed", "coverage": 0.5,
                   "cause": "product_bug", "reason": LONG_REASON, "step": 4})
    screen.update({**base, "run_id": "r-wrong", "status": "failed", "coverage": 0.25,
                   "cause": "agent_error", "reason": "stopped early"})
    screen.update({**base, "run_id": "r-open", "status": "at_risk", "final": False,
                   "coverage": 0.25, "detected_at_seq": None, "reason": None})
    return screen


def rendered(screen: Screen, width: int) -> list[str]:
    console = Console(file=io.StringIO(), width=width, record=True)
    console.print(screen)
    return console.export_text().splitlines()


def table_rows(lines: list[str], screen: Screen) -> dict[str, list[str]]:
    """The rendered lines that hold each run's id (one each when the row did not wrap)."""
    return {run_id: [line for line in lines if run_id + " " in line] for run_id in screen.runs}


def test_the_screen_shows_expected_verdicts_legend_and_next_step():
    screen = judged_screen()
    text = " ".join(" ".join(rendered(screen, 120)).split())
    assert "PASSED ✓" not in text and "FAILED ✗" not in text  # ✓ ✗ tell the label only
    for shown in ("EXPECTED", "fail · product bug ✓", "PASSED", "FAILED",
                  "pass ✗", "at risk", "#9", "#4", "3/4 decided", "COVERAGE: share", "███░░░ 50%"):
        assert shown in text, shown
    assert screen.agreement() == (2, 3)
    hint = next_step(screen, EXAMPLES / "train", EXAMPLES / "test")
    assert hint.startswith("2 of 3 labelled runs judged as labelled.")
    assert f"trustlayer report model.json {EXAMPLES / 'test'} -o report.html --train " \
        f"{EXAMPLES / 'train'}" in hint


@pytest.mark.parametrize("width", [80, 100, 120])
def test_the_table_fits_the_terminal_one_line_per_run(width):
    screen = judged_screen()
    lines = rendered(screen, width)
    assert max(len(line.rstrip()) for line in lines) <= width
    for run_id, holding in table_rows(lines, screen).items():
        assert len(holding) == 1, (run_id, holding)
    header = next(line for line in lines if "RUN" in line and "VERDICT" in line)
    for column in ("RUN", "VERDICT", "COVERAGE", "REASON"):
        assert column in header, (width, column)
    fail_row = table_rows(lines, screen)["r-fail"][0]
    assert "product bug: " in fail_row and "…" in fail_row, "the long reason is cut to its line"
    assert len(screen.reasons()) == 4


def test_wider_terminals_add_columns_and_120_shows_them_all():
    headers = {width: next(line for line in rendered(judged_screen(), width)
                           if "RUN" in line and "VERDICT" in line) for width in (80, 100, 120)}
    every = ("RUN", "EXPECTED", "VERDICT", "COVERAGE", "AT EVENT", "MODEL", "REASON")
    assert [column for column in every if column in headers[120]] == list(every)
    assert "EXPECTED" in headers[100] and "MODEL" not in headers[100]
    assert "EXPECTED" not in headers[80]
    assert len(headers[80].split()) < len(headers[100].split()) < len(headers[120].split())


def test_the_reasons_after_the_table_are_whole():
    screen = judged_screen()
    console = Console(file=io.StringIO(), width=80, record=True)
    for line in screen.reasons():
        console.print(line)
    exported = console.export_text()
    text = " ".join(exported.split())
    assert "r-fail FAILED ███░░░ 50% product bug: " + LONG_REASON in text
    lines = exported.splitlines()
    under = lines[lines.index(next(line for line in lines if line.startswith("r-fail"))) + 1:]
    assert all(line.startswith("     ") for line in under[:3]), "wrapped with its indent"
    assert "r-open at risk" in text


def test_the_clock_runs_between_updates():
    screen = Screen(["r1"], {}, "demo")
    first = Console(file=io.StringIO(), width=100, record=True)
    first.print(screen)
    time.sleep(0.25)
    second = Console(file=io.StringIO(), width=100, record=True)
    second.print(screen)
    assert first.export_text().splitlines()[0] != second.export_text().splitlines()[0]


def test_sigterm_stops_the_demo_and_its_worker_leaving_nothing_behind(kafka, tmp_path):
    demo = subprocess.Popen([sys.executable, "-m", "trustlayer.cli", "demo", str(EXAMPLES),
                             "--broker", kafka.bootstrap, "--speed", "0.05", "--timeout", "300"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=tmp_path)
    worker_pid, seen = None, []
    deadline = time.monotonic() + 150
    while worker_pid is None and time.monotonic() < deadline:
        line = demo.stdout.readline()
        if not line:
            break
        seen.append(line)
        if line.startswith("worker (pid "):
            worker_pid = int(line.split("pid ")[1].split(")")[0])
    assert worker_pid is not None, "".join(seen)[-3000:]
    family = descendants(demo.pid)
    assert worker_pid in family
    demo.send_signal(signal.SIGTERM)
    assert demo.wait(timeout=60) == 128 + signal.SIGTERM
    demo.stdout.close()
    deadline = time.monotonic() + 10  # a child of the worker may take a moment to follow
    while (alive := [pid for pid in family if os.path.exists(f"/proc/{pid}")]) and \
            time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive, f"the demo's worker (pid {worker_pid}) or its children outlived it: {alive}"
    assert list(tmp_path.iterdir()) == [], "the demo left files in its working directory"


def descendants(pid: int) -> set[int]:
    """Every process below `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, pending = set(), [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.add(child)
            pending.append(child)
    return found
