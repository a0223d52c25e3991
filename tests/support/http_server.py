"""A real HTTP server on 127.0.0.1 whose answers a test scripts, and which records requests.

    with RecordingServer(lambda request: Answer(503) if request.number < 3 else Answer())
        as server:
        ...  # send to server.url
    server.requests  # every request received, in order

The server is ``http.server.ThreadingHTTPServer`` on a free port in a daemon thread; a slow
answer (``Answer(delay=...)``) blocks only its own request.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType


@dataclass(frozen=True)
class Request:
    """One request as received: its number (1-based), method, path, headers, body, time."""

    number: int
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    def header(self, name: str) -> str | None:
        """A header's value by case-insensitive name (None when absent)."""
        return self.headers.get(name.lower())


@dataclass(frozen=True)
class Answer:
    """What to answer: status, headers, body, after ``delay`` seconds."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


Script = Callable[[Request], Answer]


class RecordingServer:
    """Serves on ``url`` until the ``with`` block ends; ``requests`` lists what arrived."""

    def __init__(self, script: Script | None = None) -> None:
        self.script: Script = script or (lambda request: Answer())
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> RecordingServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _record(self, handler: BaseHTTPRequestHandler) -> Request:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length)
        with self._lock:
            request = Request(
                number=len(self.requests) + 1,
                method=handler.command,
                path=handler.path,
                headers={name.lower(): value for name, value in handler.headers.items()},
                body=body,
                at=time.monotonic(),
            )
            self.requests.append(request)
        return request

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                answer = server.script(server._record(self))
                if answer.delay:
                    time.sleep(answer.delay)
                try:
                    self.send_response(answer.status)
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(answer.body)))
                    self.end_headers()
                    self.wfile.write(answer.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a timeout test)

            do_GET = do_POST = do_PUT = do_PATCH = _serve

            def log_message(self, format: str, *args: object) -> None:
                pass  # keep test output quiet

        return Handler


def refused_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (a port that was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"
