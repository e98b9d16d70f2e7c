"""A browser agent's state from a Playwright page (sync or asyncio API): screenshot,
visible text, ARIA snapshot, URL, title, and the HTTP responses the page received since
the previous state (``observation.network``). Playwright itself is the agent's
dependency: this module calls the page it is given and imports nothing of it."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

# what a page's work shows in: documents and API calls; static files are left out
NETWORK_TYPES = ("document", "xhr", "fetch", "other")
MAX_NETWORK = 40  # the format's "a few dozen"; the newest are kept

_logs: WeakKeyDictionary[Any, list[dict[str, Any]]] = WeakKeyDictionary()


def response_entry(method: str, url: str, status: int, resource_type: str) -> dict[str, Any]:
    """One ``observation.network`` entry: the path keeps its query, loses scheme and host.

    >>> response_entry("POST", "http://127.0.0.1:8000/api/items?x=1", 201, "fetch")
    {'method': 'POST', 'path': '/api/items?x=1', 'status': 201, 'type': 'fetch'}
    """
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return {"method": method, "path": path, "status": status, "type": resource_type}


def watch_network(page: Any) -> Any:
    """Start recording the page's responses (call it before the first navigation; the
    first :func:`state_from_page` starts it otherwise); returns `page`. Calling it again
    changes nothing."""
    if page in _logs:
        return page
    log: list[dict[str, Any]] = []
    _logs[page] = log

    def on_response(response: Any) -> None:
        request = response.request
        if request.resource_type in NETWORK_TYPES:
            log.append(response_entry(request.method, response.url, response.status,
                                      request.resource_type))

    page.on("response", on_response)
    return page


def _state(page: Any, text: str, a11y: str, title: str, shot: bytes | None) -> dict[str, Any]:
    log = _logs[page]
    responses, log[:] = log[-MAX_NETWORK:], []
    state: dict[str, Any] = {"text": text, "a11y": a11y, "url": page.url, "title": title,
                             "network": responses}
    if shot is not None:
        state["screenshot"] = shot
    return state


def state_from_page(page: Any, *, screenshot: bool = True, full_page: bool = False
                    ) -> dict[str, Any]:
    """The keywords of ``run.state(...)`` for `page` (Playwright's sync API) now; the
    responses recorded since the previous call go with it (and are forgotten)."""
    watch_network(page)
    body = page.locator("body")
    return _state(page, body.inner_text(), body.aria_snapshot(), page.title(),
                  page.screenshot(full_page=full_page) if screenshot else None)


async def async_state_from_page(page: Any, *, screenshot: bool = True, full_page: bool = False
                                ) -> dict[str, Any]:
    """:func:`state_from_page` for a page of Playwright's asyncio API."""
    watch_network(page)
    body = page.locator("body")
    return _state(page, await body.inner_text(), await body.aria_snapshot(), await page.title(),
                  await page.screenshot(full_page=full_page) if screenshot else None)
