"""A fake model with a real model's latency, for benchmarks and load tests (issue 31).

With LINDY_FAKE_MODEL_LATENCY_MS set (and the product in offline mode), every call the offline
provider would answer goes instead over HTTP, through the real `anthropic` client (its connection
pool, timeouts and retries), to a server that speaks the Messages API: it waits the stated delay,
then answers with the offline rules. LINDY_FAKE_MODEL_429_RATE / _529_RATE make that share of
requests answer at once with 429 (rate_limit_error) or 529 (overloaded_error) and a `retry-after`
header, as the API does, so the SDK's retries are exercised too.

The server runs in the calling process (a daemon thread, started on first use) unless
LINDY_FAKE_MODEL_URL names one started apart (`manage.py fake_model_server`): a benchmark puts it
in its own process so the offline rules' CPU does not count against the worker being measured.

The route and prompt variant travel in two request headers, since the offline rules are per route
and the Messages API has no field for either.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.conf import settings

from .offline import OFFLINE_MODEL, estimate_tokens, policy_for
from .types import CompletionRequest, ProviderReply

logger = logging.getLogger(__name__)

ROUTE_HEADER = "x-lindy-route"
VARIANT_HEADER = "x-lindy-prompt-variant"
API_KEY = "lindy-fake-model"
# What the API's 429 and 529 answers carry; the SDK waits this long before its retry.
RETRY_AFTER_SECONDS = 1
_ERRORS = {429: "rate_limit_error", 529: "overloaded_error"}


def enabled() -> bool:
    return settings.MODEL_OFFLINE and settings.FAKE_MODEL_LATENCY_MS >= 0


def _answer(body: dict, route: str, variant: str) -> dict:
    policy = policy_for(route)
    if policy is None:
        raise LookupError(f"The offline provider has no rules for route {route!r}.")
    request = CompletionRequest(
        route=route, system=body.get("system") or "", messages=body.get("messages") or [],
        tools=body.get("tools"), tool_choice=body.get("tool_choice"), max_tokens=body.get("max_tokens") or 4096,
        model=body.get("model") or OFFLINE_MODEL, prompt_variant=variant or "default",
    )
    reply = policy(request)
    content: list[dict] = [{"type": "text", "text": reply.text}] if reply.text else []
    content += [{"type": "tool_use", "id": call.id, "name": call.name, "input": call.input}
                for call in reply.tool_calls]
    prompt = request.system_text() + json.dumps(request.messages, default=str) + json.dumps(request.tools or [])
    output = reply.text + json.dumps([c.input for c in reply.tool_calls])
    return {
        "id": f"msg_lindy_fake_{time.monotonic_ns()}", "type": "message", "role": "assistant",
        "model": request.model, "content": content,
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": estimate_tokens(prompt), "output_tokens": estimate_tokens(output),
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps connections open, so the client's pool reuses them as it would the API's.
    protocol_version = "HTTP/1.1"
    server: FakeModelServer

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, body: dict, headers: dict | None = None) -> None:
        self.server.count(status)
        payload = json.dumps(body).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path.startswith("/v1/messages/count_tokens"):
            self._send(200, {"input_tokens": estimate_tokens(json.dumps(body.get("messages"), default=str))})
            return
        if not self.path.startswith("/v1/messages"):
            self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
            return
        status = self.server.draw_error()
        if status:
            self._send(status, {"type": "error", "error": {"type": _ERRORS[status], "message": "fake model"}},
                       {"retry-after": str(RETRY_AFTER_SECONDS)})
            return
        started = time.monotonic()
        self.server.count(0, +1)
        try:
            message = _answer(body, self.headers.get(ROUTE_HEADER, ""), self.headers.get(VARIANT_HEADER, ""))
        except Exception as exc:  # the offline rules' failure is the model's 400, as the API would say
            self.server.count(0, -1)
            self._send(400, {"type": "error", "error": {"type": "invalid_request_error", "message": str(exc)}})
            return
        # The delay counts from the request's arrival, so the rules' own time is part of it.
        time.sleep(max(0.0, self.server.latency - (time.monotonic() - started)))
        self.server.count(0, -1)
        self._send(200, message)


class FakeModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, *, latency_ms: int, rate_429: float = 0.0, rate_529: float = 0.0,
                 host: str = "127.0.0.1", port: int = 0):
        super().__init__((host, port), _Handler)
        self.latency = latency_ms / 1000
        self.rate_429, self.rate_529 = rate_429, rate_529
        self._random = random.Random()
        self._lock = threading.Lock()
        self.answered: Counter[int] = Counter()  # by status: what a benchmark reports as requests/min
        self.in_flight = self.most_in_flight = 0

    def count(self, status: int, delta: int = 0) -> None:
        with self._lock:
            if status:
                self.answered[status] += 1
            self.in_flight += delta
            self.most_in_flight = max(self.most_in_flight, self.in_flight)

    def draw_error(self) -> int:
        with self._lock:
            draw = self._random.random()
        if draw < self.rate_429:
            return 429
        if draw < self.rate_429 + self.rate_529:
            return 529
        return 0

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        assert isinstance(host, str)  # an IP socket's address, never a Unix socket's bytes
        return f"http://{host}:{port}"

    @classmethod
    def from_settings(cls, **kwargs) -> FakeModelServer:
        return cls(latency_ms=max(settings.FAKE_MODEL_LATENCY_MS, 0), rate_429=settings.FAKE_MODEL_429_RATE,
                   rate_529=settings.FAKE_MODEL_529_RATE, **kwargs)


_started: dict[tuple, FakeModelServer] = {}
_start_lock = threading.Lock()


def server_url() -> str:
    """The fake model's URL: LINDY_FAKE_MODEL_URL, else a server in this process (one per settings)."""
    if settings.FAKE_MODEL_URL:
        return settings.FAKE_MODEL_URL
    key = (settings.FAKE_MODEL_LATENCY_MS, settings.FAKE_MODEL_429_RATE, settings.FAKE_MODEL_529_RATE)
    with _start_lock:
        server = _started.get(key)
        if server is None:
            server = _started[key] = FakeModelServer.from_settings()
            threading.Thread(target=server.serve_forever, name="lindy-fake-model", daemon=True).start()
    return server.url


def complete(request: CompletionRequest) -> ProviderReply:
    """The offline rules' answer to `request`, asked over HTTP of the fake model."""
    from dataclasses import replace

    from .providers import anthropic as anthropic_provider

    headers = {ROUTE_HEADER: request.route, VARIANT_HEADER: request.prompt_variant}
    client = anthropic_provider.client_for(api_key=API_KEY, base_url=server_url())
    return anthropic_provider.complete(replace(request, model=request.model or OFFLINE_MODEL),
                                       via=client, extra_headers=headers)
