"""An agent that adds items to a to-do page in headless Chromium, each run recorded with
trustlayer's runner library, to a trace directory or to the worker's Kafka topic:

    python examples/playwright/todo_agent.py "buy milk" "call mom" --runs runs/
    python examples/playwright/todo_agent.py "pay rent" --kafka localhost:9092

`--button Clear` makes it press the wrong button (an agent error), `--broken` serves a page
whose API fails (a product bug). `add_item` is the whole instrumentation (README); leaving
its block ends the run (outcome ``unknown``: the agent does not know the truth, the judge
decides).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from trustlayer.runner import Run, Sink, TraceDir
from trustlayer.runner.playwright import state_from_page, watch_network

sys.path.insert(0, str(Path(__file__).parent))
from todo_site import serve  # beside this file

CHROMIUM: dict[str, Any] = {"executable_path": "/usr/bin/chromium", "args": [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run"]}


def add_item(url: str, item: str, sink: Sink, button: str = "Add") -> str:
    with sync_playwright() as pw, Run("todo-add", sink) as run:
        page = watch_network(pw.chromium.launch(**CHROMIUM).new_page())
        page.goto(url)
        run.state(**state_from_page(page))
        run.action("type", "New item", item)
        page.get_by_label("New item").fill(item)
        run.action("click", button)
        page.get_by_role("button", name=button).click()
        page.locator("#status:not(:empty)").wait_for()
        run.state(**state_from_page(page))
    return run.run_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("items", nargs="+", help="one run per item")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--runs", type=Path, help="trace directory to write")
    where.add_argument("--kafka", metavar="BOOTSTRAP", help="broker to publish to")
    parser.add_argument("--topic", default="trustlayer.events")
    parser.add_argument("--button", default="Add")
    parser.add_argument("--broken", action="store_true")
    args = parser.parse_args(argv)
    if args.kafka:
        from stream.kafka.runner_sink import KafkaSink  # only when used: the stream extra
        sink: Sink = KafkaSink(args.kafka, args.topic)
    else:
        sink = TraceDir(args.runs)
    with serve(args.broken) as url:
        try:
            for item in args.items:
                print(add_item(url, item, sink, args.button))
        finally:
            sink.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
