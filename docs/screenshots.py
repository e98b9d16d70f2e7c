"""Take the screenshots in docs/screenshots/ with headless Chromium, from real runs:

* ``report.png``: ``trustlayer report`` of examples/jupyter/test (with ``--train``), and
  ``report-divergence.png`` of one failed run of it (the divergence and its word diff);
* ``demo-80.png`` and ``demo-120.png``: the last screen of ``trustlayer demo`` run in a
  pseudo-terminal (``script``) 80 and 120 columns wide, its ANSI output drawn by rich as SVG.

    .venv/bin/python docs/screenshots.py [report] [demo]    # both by default
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.text import Text

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
EXAMPLES = ROOT / "examples" / "jupyter"
TRUSTLAYER = [sys.executable, "-m", "trustlayer.cli"]
LIVE_REDRAW = re.compile(r"(?:\x1b\[2K\x1b\[1A)+\x1b\[2K")  # rich Live moving up to redraw


def chromium_png(page: Path, out: Path, width: int, height: int) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--user-data-dir={profile}",
                        f"--window-size={width},{height}", f"--screenshot={out}", page.as_uri()],
                       check=True, capture_output=True, timeout=120)


def report(work: Path, runs: Path, name: str, height: int) -> Path:
    model, page = work / "model.json", work / f"{name}.html"
    if not model.exists():
        subprocess.run([*TRUSTLAYER, "-q", "learn", str(EXAMPLES / "train"), "-o", str(model)],
                       check=True)
    subprocess.run([*TRUSTLAYER, "-q", "report", str(model), str(runs), "-o", str(page),
                    "--train", str(EXAMPLES / "train")], check=True)
    chromium_png(page, OUT / f"{name}.png", 1400, height)
    return OUT / f"{name}.png"


def demo(work: Path, columns: int) -> Path:
    """Run the demo in a pseudo-terminal; keep what it drew last (the final table and
    everything printed after it)."""
    log = work / "demo.typescript"
    env = dict(os.environ, COLUMNS=str(columns), LINES="60")
    command = " ".join([*TRUSTLAYER, "demo", str(EXAMPLES), "--speed", "8"])
    subprocess.run(["script", "-qfec", command, str(log)], env=env, check=True,
                   stdout=subprocess.DEVNULL, timeout=300)
    raw = log.read_text(encoding="utf-8", errors="replace")
    last = LIVE_REDRAW.split(raw)[-1]
    last = last[: last.rfind("\nScript done")] if "\nScript done" in last else last
    text = Text.from_ansi(last.replace("\r", ""))
    console = Console(record=True, width=columns, file=open(os.devnull, "w"))
    console.print(text)
    svg, page, png = (work / f"demo-{columns}.svg", work / f"demo-{columns}.html",
                      OUT / f"demo-{columns}.png")
    console.save_svg(str(svg), title=f"trustlayer demo ({columns} columns)")
    # the SVG scales to the window: a page showing it at its own size, the window its size
    width, height = (round(float(n)) for n in
                     re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg.read_text())
                     .groups())
    page.write_text(f'<body style="margin:0"><img src="{svg.name}" width="{width}" '
                    f'height="{height}"></body>')
    chromium_png(page, png, width, height)
    return png


def main(which: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="trustlayer-shots-"))
    try:
        if "report" in which:
            print(report(work, EXAMPLES / "test", "report", 1000))
            # one failed run ('hello word' typed for 'hello world'): its divergence and diff
            print(report(work, EXAMPLES / "test" / "jl-save-textfile-test-14.jsonl",
                         "report-divergence", 1400))
        if "demo" in which:
            print(demo(work, 80))
            print(demo(work, 120))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["report", "demo"])
