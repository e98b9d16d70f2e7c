"""Runs of examples/playwright/todo_agent.py (headless Chromium on a local page), shared
by the file test and the Kafka test: the agent as a user runs it, in a subprocess."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
AGENT = REPO / "examples" / "playwright" / "todo_agent.py"
ITEM = "buy milk"
# how each test run goes wrong: (name, options of the agent, verdict, cause)
CASES = (("success", (), "pass", None), ("wrong-button", ("--button", "Clear"), "fail",
          "agent_error"), ("api-down", ("--broken",), "fail", "product_bug"))


def run_agent(*args: str, count: int = 1) -> list[str]:
    """Run the example agent `count` times; the run ids it printed."""
    done = subprocess.run([sys.executable, str(AGENT), *[ITEM] * count, *args],
                          capture_output=True, text=True, timeout=180, cwd=REPO,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


def readme_snippet() -> str:
    """The Python block of the README's runner section."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Instrument your own agent", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]
