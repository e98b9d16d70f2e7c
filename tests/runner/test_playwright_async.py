"""The Playwright adapter with the asyncio API and an asyncio run: a page served by the
test, its responses since the previous state, static files left out."""
from __future__ import annotations

import asyncio
import sys

from playwright.async_api import async_playwright
from playwright_example import AGENT

from trustlayer.observe.network import Response
from trustlayer.observe.traces import read_run
from trustlayer.runner import AsyncRun, TraceDir
from trustlayer.runner.playwright import async_state_from_page, watch_network

sys.path.insert(0, str(AGENT.parent))
from todo_agent import CHROMIUM  # beside the example, on the path above
from todo_site import serve


def test_an_async_agent_records_its_page(tmp_path):
    async def agent(url: str) -> None:
        async with async_playwright() as pw, AsyncRun("todo-add", TraceDir(tmp_path), "a1") as run:
            browser = await pw.chromium.launch(**CHROMIUM)
            page = watch_network(await browser.new_page())
            await page.goto(url)
            await run.state(**await async_state_from_page(page))
            await run.action("click", "Add")
            await page.get_by_role("button", name="Add").click()
            await page.locator("#status:not(:empty)").wait_for()
            await run.state(**await async_state_from_page(page, screenshot=False))
            await run.end("success")
            await browser.close()

    with serve() as url:
        asyncio.run(agent(url))
    first, _, second, end = read_run(tmp_path / "a1.jsonl").events
    assert first.observation.network == (
        Response("GET", "/", 200, "document"),)
    assert second.observation.network == (
        Response("POST", "/api/items", 201, "fetch"),)
    assert first.observation.screenshot is not None and second.observation.screenshot is None
    assert "Saved" in second.observation.text and second.observation.title == "To-do"
    assert end.outcome == "success"
