"""A tiny local OpenAI-compatible chat-completions server for tests (no real LLM).

``FakeLLMServer.behaviour`` selects the reply: ``"same"``, ``"different"``,
``"garbage"`` (non-JSON content), ``"error500"``, or ``"slow"`` (sleeps
``slow_s`` seconds before answering "same"). Every request body is recorded in
``requests``.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeLLMServer:
    """Serves ``POST /v1/chat/completions`` on 127.0.0.1 in a background thread."""

    def __init__(self) -> None:
        self.behaviour = "same"
        self.slow_s = 2.0
        self.requests: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = False  # server_close() joins the request threads
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wakes "slow" handlers
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def _reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.behaviour == "error500":
            return 500, {"error": {"message": "boom", "type": "server_error"}}
        if self.behaviour == "slow":
            self._stop.wait(self.slow_s)
        content = {
            "same": json.dumps({"same": True, "reason": "only the clock differs"}),
            "slow": json.dumps({"same": True, "reason": "slow but same"}),
            "different": json.dumps({"same": False, "reason": "another file name"}),
            "garbage": "I think they are probably the same, yes.",
        }[self.behaviour]
        return 200, {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path != "/v1/chat/completions":
                    status, payload = 404, {"error": {"message": "not found"}}
                else:
                    body = json.loads(raw)
                    server.requests.append(body)
                    status, payload = server._reply(body)
                data = json.dumps(payload).encode("utf-8")
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        return Handler
