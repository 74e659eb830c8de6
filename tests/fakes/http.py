"""A local HTTP server for tests that speaks an outside API: scripted answers, recorded requests.

    with FakeServer() as server:
        server.script("POST", "/v1/messages", [Reply(429, {...}, {"retry-after": "0"}), Reply(200, {...})])
        ... point the real client at server.url ...
        assert server.requests[0].json["model"] == ...

Routes with no script left answer with the route's `default` (or 404).
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    status: int = 200
    body: dict | list | str | bytes | None = None
    headers: dict = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Recorded:
    method: str
    path: str
    query: dict
    headers: dict
    body: bytes
    at: float = field(default_factory=time.monotonic)  # when it arrived, for back-off assertions

    @property
    def json(self):
        return json.loads(self.body or b"null")

    @property
    def form(self) -> dict:
        return {k: v[0] for k, v in parse_qs(self.body.decode()).items()}


Responder = Callable[[Recorded], Reply]


class FakeServer:
    def __init__(self):
        self.requests: list[Recorded] = []
        self._scripts: dict[tuple[str, str], deque] = defaultdict(deque)
        self._defaults: dict[tuple[str, str], Reply | Responder] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, method: str, path: str, replies: list[Reply | Responder]) -> None:
        with self._lock:
            self._scripts[(method.upper(), path)].extend(replies)

    def default(self, method: str, path: str, reply: Reply | Responder) -> None:
        self._defaults[(method.upper(), path)] = reply

    def requests_to(self, method: str, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method.upper() and r.path == path]

    def _next_reply(self, recorded: Recorded) -> Reply:
        key = (recorded.method, recorded.path)
        with self._lock:
            queue = self._scripts.get(key)
            reply = queue.popleft() if queue else self._defaults.get(key)
        if reply is None:
            return Reply(404, {"error": f"no fake for {key}"})
        return reply(recorded) if callable(reply) else reply

    def _handler_class(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _handle(self):
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                recorded = Recorded(
                    method=self.command, path=parts.path, query={k: v[0] for k, v in parse_qs(parts.query).items()},
                    headers={k.lower(): v for k, v in self.headers.items()}, body=self.rfile.read(length),
                )
                with fake._lock:
                    fake.requests.append(recorded)
                reply = fake._next_reply(recorded)
                if reply.delay:
                    time.sleep(reply.delay)
                body = reply.body
                content_type = "application/json"
                if isinstance(body, (dict, list)) or body is None:
                    payload = json.dumps(body if body is not None else {}).encode()
                elif isinstance(body, str):
                    payload, content_type = body.encode(), "text/plain"
                else:
                    payload = body
                self.send_response(reply.status)
                headers = {"Content-Type": content_type, **reply.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

        return Handler

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
