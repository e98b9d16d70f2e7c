"""The to-do page the example agent works on, served from a thread on a free local port;
`broken` makes its API answer 500 (a product bug for the judge to blame)."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PAGE = (Path(__file__).parent / "index.html").read_bytes()


def handler(broken: bool) -> type[BaseHTTPRequestHandler]:
    class ToDo(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._answer(200, PAGE, "text/html") if self.path == "/" else self._answer(404)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path != "/api/items":
                self._answer(404)
            else:
                self._answer(500 if broken else 201, b"{}", "application/json")

        def _answer(self, status: int, body: bytes = b"", kind: str = "text/plain") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:  # the agent's output stays readable
            pass

    return ToDo


@contextmanager
def serve(broken: bool = False) -> Iterator[str]:
    """The page's URL while the server runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(broken))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()
