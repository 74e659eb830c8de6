"""FakeServer with path patterns, for APIs whose paths carry ids (/v3/chats/{id}/messages)."""

from __future__ import annotations

import re

from tests.fakes.http import FakeServer, Recorded, Reply


class PatternFakeServer(FakeServer):
    def __init__(self):
        super().__init__()
        self._patterns: list[tuple[str, re.Pattern, object]] = []

    def route(self, method: str, pattern: str, reply) -> None:
        """`reply` is a Reply or a callable(recorded, match) -> Reply; used when no exact script matches."""
        self._patterns.append((method.upper(), re.compile(f"^{pattern}$"), reply))

    def _next_reply(self, recorded: Recorded) -> Reply:
        key = (recorded.method, recorded.path)
        with self._lock:
            queue = self._scripts.get(key)
            scripted = queue.popleft() if queue else self._defaults.get(key)
        if scripted is not None:
            return scripted(recorded) if callable(scripted) else scripted
        for method, pattern, reply in self._patterns:
            match = pattern.match(recorded.path)
            if method == recorded.method and match:
                return reply(recorded, match) if callable(reply) else reply
        return Reply(404, {"error": f"no fake for {key}"})
