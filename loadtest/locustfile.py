"""The 50 simulated people of `make loadtest` (loadtest/run.py starts this headless).

Each persona uses the pages and the API in its own proportion: members most, then team admins,
support watching channel health, one superuser on routing and the admin. Requests alternate
between the web processes (LOADTEST_HOSTS), as a round-robin balancer would; a refused connection
or a 503 (a web process restarting) is retried on the other one and counted apart as a retry,
never as an error. Every other non-2xx answer is an error.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import time

from locust import HttpUser, between, task

HOSTS = os.environ.get("LOADTEST_HOSTS", "http://127.0.0.1:8000").split(",")
PASSWORD = "lindy-demo"
MEMBERS = os.environ.get("LOADTEST_MEMBERS", "user@acme.test").split(",")
_member_logins = itertools.cycle(MEMBERS)
_admin_logins = itertools.cycle(["admin@acme.test", "admin@globex.test"])
_host_turn = itertools.count()
SESSIONS = json.loads(open(os.environ["LOADTEST_SESSIONS"]).read()) if os.environ.get("LOADTEST_SESSIONS") else {}

# The page group of a path: its first segment (the app), the API apart. The trivial view is make
# bench's (/bench/trivial/: the signed-in layout, empty); /healthz, the liveness probe (no session,
# no template), is reported on its own.
GROUPS = {"bench": "trivial", "": "home", "tasks": "tasks", "meetings": "tasks", "memory": "memory", "validator": "validator",
          "channels": "channels", "drafting": "drafting", "hydration": "hydration", "analyst": "analyst",
          "router": "router", "admin": "admin", "api": "api", "healthz": "healthz", "accounts": "login"}


def group_of(path: str) -> str:
    return GROUPS.get(path.strip("/").split("/")[0], "other")


class Persona(HttpUser):
    abstract = True
    # Between clicks: 0.5 to 2.5 s, quicker than a person reads, so that in 3 minutes every page group
    # but the Django admin gets the 100 requests a p95 needs (loadtest/run.py MIN_SAMPLES); at 2 to 8 s
    # the rarer groups had 17 to 66. LOADTEST_WAIT="2,8" gives a person's pace.
    wait_time = between(*(float(s) for s in os.environ.get("LOADTEST_WAIT", "0.5,2.5").split(",")))
    host = HOSTS[0]
    login = ""
    pages: tuple[tuple[str, int], ...] = ()

    def _send(self, method: str, path: str, **kwargs):
        """One request through the balancer: retried on the other process while one restarts."""
        group = group_of(path)
        headers = {"X-Forwarded-Proto": "https", **kwargs.pop("headers", {})}
        for attempt in range(10):
            base = HOSTS[next(_host_turn) % len(HOSTS)]
            headers["Referer"] = f"https://{base.split('://', 1)[1]}{path}"
            name = group if attempt == 0 else f"retry {group}"
            with self.client.request(method, base + path, name=name, headers=headers, catch_response=True,
                                     allow_redirects=False, **kwargs) as response:
                if response.status_code in (0, 503):  # refused, or a process on its way down
                    response.failure(f"retried: {response.status_code}")
                    time.sleep(0.2 * (attempt + 1))
                    continue
                if response.status_code >= 400 or (response.status_code >= 300 and method == "GET"):
                    response.failure(f"{response.status_code} on {path}")
                else:
                    response.success()
                return response
        return None

    def on_start(self) -> None:
        self.client.headers["X-Forwarded-Proto"] = "https"
        if SESSIONS:
            # Signed in earlier (loadtest/run.py made the session): people mostly come back signed in.
            self.client.cookies.set(SESSIONS["cookie"], SESSIONS["sessions"][self.login])
        else:
            response = self._send("GET", "/accounts/login/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"',
                              response.text if response is not None else "")
            self._unsecure_cookies()
            self._send("POST", "/accounts/login/", data={
                "csrfmiddlewaretoken": token.group(1) if token else "", "username": self.login, "password": PASSWORD,
            })
            self._unsecure_cookies()
        self._discover()

    def _unsecure_cookies(self) -> None:
        # DEBUG=0 marks the cookies Secure (production sits behind TLS); this client speaks plain HTTP
        # to the processes, as a TLS-terminating balancer would, so it keeps sending them.
        for cookie in list(self.client.cookies):
            if cookie.secure:
                self.client.cookies.set(cookie.name, cookie.value, domain=cookie.domain, path=cookie.path)

    def _discover(self) -> None:
        """Pages that name an object: the user's first memory file system."""
        self.fs_pages: list[str] = []
        response = self._send("GET", "/api/memory/filesystems")
        if response is not None and response.status_code == 200:
            body = response.json()
            items = body.get("items", body) if isinstance(body, dict) else body
            for fs in items[:2]:
                self.fs_pages += [f"/memory/{fs['id']}/", f"/memory/{fs['id']}/files/index.md",
                                  f"/memory/{fs['id']}/revisions/", f"/hydration/{fs['id']}/"]

    @task
    def browse(self) -> None:
        paths, weights = zip(*self.pages, strict=True)
        path = random.choices(paths, weights)[0]
        if path == "<fs>":
            if not self.fs_pages:
                return
            path = random.choice(self.fs_pages)
        self._send("GET", path)


class Member(Persona):
    weight = 30

    def on_start(self) -> None:
        self.login = next(_member_logins)
        super().on_start()

    pages = (("/", 6), ("/tasks/", 3), ("/meetings/", 1), ("/memory/", 3), ("<fs>", 4), ("/memory/context/", 1),
             ("/validator/", 3), ("/channels/", 1), ("/channels/texting/", 1), ("/drafting/", 2), ("/hydration/", 2),
             ("/api/me", 2), ("/api/tasks", 2), ("/api/validator/decisions?status=blocked", 2),
             ("/api/memory/filesystems", 1), ("/api/channels/texting", 1), ("/bench/trivial/", 6), ("/healthz", 2))


class TeamAdmin(Persona):
    weight = 12

    def on_start(self) -> None:
        self.login = next(_admin_logins)
        super().on_start()

    pages = (("/", 5), ("/memory/", 3), ("<fs>", 5), ("/hydration/", 3), ("/analyst/", 2), ("/analyst/failures/", 1),
             ("/validator/", 2), ("/validator/stats/", 1), ("/drafting/charts/", 1), ("/drafting/learner/", 1),
             ("/channels/", 2), ("/tasks/", 2), ("/api/tasks", 2), ("/api/channels/slack", 1), ("/bench/trivial/", 5), ("/healthz", 1))


class Support(Persona):
    weight = 5
    login = "support@lindy.test"
    pages = (("/", 3), ("/channels/health/", 5), ("/channels/health/opt-outs/", 1), ("/api/channels/health", 3),
             ("/analyst/failures/", 1), ("/bench/trivial/", 2), ("/healthz", 1))


class Superuser(Persona):
    weight = 3
    login = "ops@lindy.test"
    pages = (("/", 3), ("/router/", 5), ("/router/routes/validator/", 3), ("/validator/evals/", 2),
             ("/analyst/", 1), ("/analyst/failures/", 2), ("/admin/", 2), ("/api/router/routes", 2), ("/bench/trivial/", 2), ("/healthz", 1))
