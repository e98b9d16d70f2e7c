"""How long ``trustlayer --version`` takes to answer, against ``python -c pass`` timed in the
same run (the interpreter's own start on this machine), and ``trustlayer --help``.

    .venv/bin/python benchmarks/cli_startup.py [REPEATS]

Each command runs REPEATS times (default 15) in a fresh process; the median and the
slowest wall time are printed, and the commands' medians over the interpreter's. Goal:
``--version`` under 0.3 s (the judging, image and streaming stacks are imported by the
commands that need them, not at start).
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time

COMMANDS = {"python -c pass": [sys.executable, "-c", "pass"],
            "trustlayer --version": [sys.executable, "-m", "trustlayer.cli", "--version"],
            "trustlayer --help": [sys.executable, "-m", "trustlayer.cli", "--help"]}
GOAL_SECONDS = 0.3


def wall_times(argv: list[str], repeats: int) -> list[float]:
    """Wall seconds of `repeats` runs of `argv` (output discarded), after one warm-up."""
    subprocess.run(argv, check=True, capture_output=True)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return times


def main(repeats: int) -> None:
    medians = {}
    for name, argv in COMMANDS.items():
        times = wall_times(argv, repeats)
        medians[name] = statistics.median(times)
        print(f"{name:<22} median {medians[name]:.3f} s  slowest {max(times):.3f} s")
    base = medians["python -c pass"]
    for name in list(COMMANDS)[1:]:
        print(f"{name:<22} ÷ python -c pass {medians[name] / base:.1f}")
    version = medians["trustlayer --version"]
    print(f"--version {version:.3f} s: {'within' if version < GOAL_SECONDS else 'OVER'} the "
          f"goal of {GOAL_SECONDS} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
