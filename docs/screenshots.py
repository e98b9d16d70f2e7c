"""Take the screenshots in docs/screenshots/ with headless Chromium, from real runs:

* ``report.png``: the first screen of ``trustlayer report`` of examples/jupyter/test (with
  ``--train``) 1280 pixels wide, ``report-390.png`` its first two screens on a phone (390
  pixels wide), ``report-divergence.png`` one failed run's divergence (expected and shown
  screens, their pixel difference, the text diff) and ``report-full-diff.png`` that
  difference opened at full resolution;
* ``demo-80.png`` and ``demo-120.png``: the last screen of ``trustlayer demo`` run in a
  pseudo-terminal (``script``) 80 and 120 columns wide, its ANSI output drawn by rich as SVG.

    .venv/bin/python docs/screenshots.py [report] [demo]    # both by default
"""
from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image
from rich.console import Console
from rich.text import Text

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
EXAMPLES = ROOT / "examples" / "jupyter"
TRUSTLAYER = [sys.executable, "-m", "trustlayer.cli"]
LIVE_REDRAW = re.compile(r"(?:\x1b\[2K\x1b\[1A)+\x1b\[2K")  # rich Live moving up to redraw


def chromium(page: Path, width: int, height: int, *flags: str, anchor: str = "") -> str:
    """Headless Chromium on `page` with `flags`; its standard output."""
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                               "--disable-background-networking", "--hide-scrollbars",
                               f"--user-data-dir={profile}", f"--window-size={width},{height}",
                               *flags, page.as_uri() + anchor],
                              check=True, capture_output=True, text=True, timeout=120).stdout


def chromium_png(page: Path, out: Path, width: int, height: int, anchor: str = "") -> None:
    chromium(page, width, height, f"--screenshot={out}", anchor=anchor)


def phone_png(page: Path, out: Path, width: int, height: int) -> None:
    """`page` in a viewport `width` pixels wide, as a phone shows it (Playwright: headless
    Chromium's own window is never narrower than 500 pixels)."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"),
                                     args=["--no-sandbox", "--disable-gpu"])
        view = browser.new_page(viewport={"width": width, "height": height})
        view.goto(page.as_uri())
        view.screenshot(path=str(out))
        browser.close()


def element_png(page: Path, element_id: str, out: Path, width: int, height: int) -> None:
    """`height` pixels of `page` from the element `element_id` down (headless Chromium
    draws nothing when it scrolls to an anchor: the page is drawn whole, then cut)."""
    probe = page.with_name(f"probe-{page.name}")
    probe.write_text(page.read_text(encoding="utf-8").replace(
        "</body>", "<script>const box = document.getElementById(" + repr(element_id) +
        ").getBoundingClientRect(); document.title = Math.round(box.top) + ' ' + "
        "document.documentElement.scrollHeight;</script></body>"), encoding="utf-8")
    top, total = map(int, re.search(r"<title>(\d+) (\d+)</title>",
                                    chromium(probe, width, 900, "--dump-dom")).groups())
    tall = page.with_suffix(".tall.png")
    chromium_png(page, tall, width, total)
    with Image.open(tall) as whole:
        whole.crop((0, max(0, top - 20), width, min(total, top - 20 + height))).save(out)


def report(work: Path, runs: Path, name: str) -> Path:
    """``trustlayer report`` of `runs` (with ``--train``) as ``work/NAME.html``."""
    model, page = work / "model.json", work / f"{name}.html"
    if not model.exists():
        subprocess.run([*TRUSTLAYER, "-q", "learn", str(EXAMPLES / "train"), "-o", str(model)],
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run([*TRUSTLAYER, "-q", "report", str(model), str(runs), "-o", str(page),
                    "--train", str(EXAMPLES / "train")], check=True, stdout=subprocess.DEVNULL)
    return page


def reports(work: Path) -> list[Path]:
    """The report's first screen (the summary and the failed runs), one failed run's
    divergence (expected, shown, their pixel difference, the text diff) and its
    difference opened at full resolution."""
    page = report(work, EXAMPLES / "test", "report")
    chromium_png(page, OUT / "report.png", 1280, 900)
    phone_png(page, OUT / "report-390.png", 390, 2 * 844)
    # one failed run ('hello word' typed for 'hello world'): its divergence and diff
    run = "jl-save-textfile-test-14"
    page = report(work, EXAMPLES / "test" / f"{run}.jsonl", "report-divergence")
    element_png(page, f"{run}-divergence", OUT / "report-divergence.png", 1280, 900)
    chromium_png(page, OUT / "report-full-diff.png", 1280, 900, f"#{run}-screen-2")
    return [OUT / f"{name}.png" for name in ("report", "report-390", "report-divergence",
                                             "report-full-diff")]


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
    console = Console(record=True, width=columns, file=io.StringIO())
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
            print(*reports(work), sep="\n")
        if "demo" in which:
            print(demo(work, 80))
            print(demo(work, 120))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["report", "demo"])
