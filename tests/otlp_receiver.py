"""An OTLP/HTTP logs endpoint for the tests: what a collector receives, decoded."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest


class Receiver:
    """An OTLP/HTTP logs endpoint: the export requests it was sent, decoded."""

    def __init__(self) -> None:
        self.requests: list[ExportLogsServiceRequest] = []
        received = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path == "/v1/logs" and \
                        self.headers["Content-Type"] == "application/x-protobuf":
                    received.append(ExportLogsServiceRequest.FromString(body))
                    self.send_response(200)
                else:
                    self.send_response(415)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1/logs"

    def records(self) -> list:
        return [record for request in self.requests for resource in request.resource_logs
                for scope in resource.scope_logs for record in scope.log_records]

    def events(self) -> dict[str, tuple[dict[str, Any], Any]]:
        """(attributes, record) of each event received, by its conversation id."""
        found = {}
        for record in self.records():
            attributes = {kv.key: kv.value for kv in record.attributes}
            found[attributes["gen_ai.conversation.id"].string_value] = (attributes, record)
        return found
