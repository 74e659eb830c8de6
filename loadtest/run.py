"""`make loadtest`: Lindy under load, started as production runs it, with processes killed midway.

On a fresh PostgreSQL database (LOADTEST_DATABASE_URL, default `lindy_loadtest` on the local server,
dropped and created) and a Redis database of its own (LOADTEST_REDIS_URL, default db 8, emptied), it
migrates, seeds the demo, and starts 2 gunicorn servers (web processes, on two ports), 2 Celery
workers consuming every queue and 1 beat, with the offline model provider and local fakes of the
iMessage, SMS and Slack APIs. For LOADTEST_SECONDS (180):

- 50 simulated people on the pages and the API in their personas' proportions (loadtest/locustfile.py,
  locust headless), requests alternating between the two web processes;
- 300 signed inbound texts across 40 conversations (30 iMessage through the Linq-style webhook, 10
  SMS through Twilio's), in bursts inside and across the debounce window;
- 100 concurrent authorizations of 20 blocked actions (5 at once per action, each by its user);
- Slack events, each delivered then retried with `X-Slack-Retry-Num`;
- hydration runs asked for ("Run now") for 20 file systems;

while it SIGKILLs each worker whole (master and pool, every queue it consumes) in turn and starts it
again, and restarts one web process (TERM, then a new one). Then it lets the work settle, runs the
recovery sweeps, counts from the database and prints the figures. It exits non-zero when a goal
fails: a server error, a text lost or answered twice, an action executed twice, anything stuck, or a
page group's p95 above 3x the trivial view's under the same load: make bench's trivial view (the
signed-in layout with an empty body, bench/bench_urls.py, mounted by loadtest/settings.py), so both
sides pay for the session, the sign-in and the navigation every page shares.

Everything it started is killed on the way out, whatever happened.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import json
import os
import random
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent

SECONDS = int(os.environ.get("LOADTEST_SECONDS", "180"))
USERS = int(os.environ.get("LOADTEST_USERS", "50"))
TEXTS = 300
CONVERSATIONS = 40
SMS_CONVERSATIONS = 10
BLOCKED_ACTIONS = 20
AUTHORIZATIONS = 100
SLACK_EVENTS = 40
HYDRATIONS = 20
TRIVIAL_RATIO_GOAL = 3.0
# A p95 is a figure once at least 5 requests lie above it: of fewer than 100 requests it is the
# slowest one to four, and one request that met a restarting worker decides it (runs of 2026-12-04:
# router at 1.8x, 2.6x and 11.6x on 17 to 36 requests).
MIN_SAMPLES = 100
SETTLE_SECONDS = int(os.environ.get("LOADTEST_SETTLE_SECONDS", "300"))
DATABASE_URL = os.environ.get("LOADTEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/lindy_loadtest")
REDIS_URL = os.environ.get("LOADTEST_REDIS_URL", "redis://127.0.0.1:6379/8")
TWILIO_PUBLIC_BASE = "https://lindy.loadtest"


def log(message: str) -> None:
    print(f"[loadtest {time.strftime('%H:%M:%S')}] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- Processes ------------------------------------------------------------------------------------

class Process:
    """One product process in its own session, so a kill reaches its children (a worker's pool)."""

    def __init__(self, name: str, argv: list[str], env: dict, logdir: Path):
        self.name, self.argv, self.env, self.logdir = name, argv, env, logdir
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> Process:
        self.starts += 1
        log_file = open(self.logdir / f"{self.name}.{self.starts}.log", "wb")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, stdout=log_file, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        return self

    def signal_group(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        """Like a machine losing the process: SIGKILL to it and its children, no chance to ack."""
        self.signal_group(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(30)

    def stop(self, timeout: float = 40) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.signal_group(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()


def wait_ready(port: int, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    last = ""
    while time.time() < deadline:
        try:
            response = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5,
                                 headers={"X-Forwarded-Proto": "https"})
            if response.status_code == 200:
                return
            last = response.text[:300]
        except httpx.HTTPError as exc:
            last = repr(exc)
        time.sleep(0.5)
    raise RuntimeError(f"web on port {port} never became ready: {last}")


def wait_worker_ready(process: Process, timeout: float = 180) -> None:
    path = process.logdir / f"{process.name}.{process.starts}.log"
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.proc is not None and process.proc.poll() is not None:
            raise RuntimeError(f"{process.name} exited: {path.read_text(errors='replace')[-3000:]}")
        if b" ready." in path.read_bytes():
            return
        time.sleep(0.5)
    raise RuntimeError(f"{process.name} never became ready")


# --- The balancer the clients use -----------------------------------------------------------------

class Balancer:
    """Round-robin over the web processes; a refused connection or a 503 is retried on the next."""

    def __init__(self, ports: list[int]):
        self.bases = [f"http://127.0.0.1:{port}" for port in ports]
        self.turn = 0
        self.lock = threading.Lock()
        self.retries = Counter()
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.statuses: dict[str, Counter] = defaultdict(Counter)
        self.client = httpx.Client(timeout=60, limits=httpx.Limits(max_connections=200))

    def request(self, group: str, method: str, path: str, **kwargs) -> httpx.Response:
        headers = {"X-Forwarded-Proto": "https", **kwargs.pop("headers", {})}
        for attempt in range(20):
            with self.lock:
                base = self.bases[self.turn % len(self.bases)]
                self.turn += 1
            started = time.perf_counter()
            try:
                response = self.client.request(method, base + path, headers=headers, **kwargs)
            except httpx.TransportError:
                with self.lock:
                    self.retries[f"{group}: connection refused or reset"] += 1
                time.sleep(0.2 * (attempt + 1))
                continue
            if response.status_code == 503:
                with self.lock:
                    self.retries[f"{group}: 503"] += 1
                time.sleep(0.2 * (attempt + 1))
                continue
            with self.lock:
                self.latencies[group].append(time.perf_counter() - started)
                self.statuses[group][response.status_code] += 1
            return response
        raise RuntimeError(f"{group} {path}: no web process answered in 20 attempts")


# --- Setup ----------------------------------------------------------------------------------------

def fresh_database() -> None:
    import psycopg

    parts = urlsplit(DATABASE_URL)
    name = parts.path.lstrip("/")
    admin = parts._replace(path="/postgres").geturl().replace("postgres://", "postgresql://", 1)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database() -> None:
    import psycopg

    parts = urlsplit(DATABASE_URL)
    admin = parts._replace(path="/postgres").geturl().replace("postgres://", "postgresql://", 1)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{parts.path.lstrip("/")}" WITH (FORCE)')


def product_environment(var_dir: Path, fakes: dict) -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("LINDY_TEST", "PYTEST"))}
    env.update({
        "DATABASE_URL": DATABASE_URL, "REDIS_URL": REDIS_URL, "CELERY_QUEUE": "lindyload",
        "LINDY_CACHE_PREFIX": "lindyload", "LINDY_VAR_DIR": str(var_dir), "LINDY_MODEL_OFFLINE": "1",
        "DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(64), "ALLOWED_HOSTS": "127.0.0.1,localhost,lindy.loadtest",
        # The clients speak plain HTTP to the processes, as a TLS-terminating balancer does (it
        # sends X-Forwarded-Proto: https); HSTS and the redirect are the balancer's job here.
        "SECURE_SSL_REDIRECT": "0", "SECURE_HSTS_SECONDS": "0",
        "WEB_CONCURRENCY": os.environ.get("LOADTEST_WEB_CONCURRENCY", "2"),
        "METRICS_TOKEN": "loadtest-metrics", "LOG_LEVEL": "INFO",
        "TWILIO_WEBHOOK_PUBLIC_BASE": TWILIO_PUBLIC_BASE,
        **fakes,
    })
    # The product's settings plus the trivial view the page groups are compared with (loadtest/settings.py).
    env["DJANGO_SETTINGS_MODULE"] = "loadtest.settings"
    return env


def manage(env: dict, *args: str) -> str:
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout


def create_people(slack_fake) -> dict:
    """40 members who text the assistant (30 on iMessage lines, 10 on an SMS line), a Slack
    workspace for the events, and API tokens for the users whose actions get blocked."""
    from channels_app.models import Channel, SendingNumber, SlackInstallation, TextingProfile
    from lindy import services as core
    from lindy.models import Membership, Team, User
    from tests.fakes import slack_api

    acme = Team.objects.get(name="Acme")
    lines = [SendingNumber.objects.create(phone=f"+1415777{n:04d}", label=f"Load line {n}", daily_cap=5000)
             for n in range(3)]
    sms_line = SendingNumber.objects.create(phone="+14157779999", label="Load SMS line", kind=Channel.SMS, daily_cap=5000)
    people = []
    for n in range(CONVERSATIONS):
        user = User.objects.create_user(email=f"load{n:02d}@acme.test", password="lindy-demo", name=f"Load {n:02d}")
        Membership.objects.create(team=acme, user=user, role=Membership.Role.MEMBER)
        sms = n >= CONVERSATIONS - SMS_CONVERSATIONS
        profile = TextingProfile.objects.create(
            user=user, phone=f"+1650777{n:04d}", number=sms_line if sms else lines[n % len(lines)],
            first_texted_at=None, imessage_capable=not sms,
        )
        _, token = core.api_token_create(user=user, name="loadtest")
        people.append({"email": user.email, "user_id": user.pk, "phone": profile.phone,
                       "line": profile.number.phone, "sms": sms, "token": token, "chat_id": f"chat-load-{n:02d}"})
    SlackInstallation.objects.create(
        team=acme, client_id=slack_api.CLIENT_ID, slack_team_id=slack_api.TEAM_ID, slack_team_name="Load workspace",
        bot_token=slack_api.BOT_TOKEN, bot_user_id=slack_api.BOT_USER_ID, bot_id="B0LINDY", user_id="U0INSTALLR",
    )
    for n in range(SLACK_EVENTS):
        slack_fake.add_channel(f"C0LOAD{n:04d}", f"load-{n}", private=False)
    return {"people": people}


def sign_in(emails: list[str], path: Path) -> None:
    """A session for each simulated person, as if they had signed in earlier: the load is the
    product's pages, not 50 password hashes at once (PBKDF2 is slow on purpose)."""
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY

    from lindy.models import User

    store = import_module(settings.SESSION_ENGINE).SessionStore
    sessions = {}
    for user in User.objects.filter(email__in=emails):
        session = store()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        sessions[user.email] = session.session_key
    path.write_text(json.dumps({"cookie": settings.SESSION_COOKIE_NAME, "sessions": sessions}))


def block_actions(balancer: Balancer, people: list[dict]) -> list[dict]:
    """Through the product's API: each of 20 users' agents proposes mail only a third party asked for."""
    blocked = []
    for n, person in enumerate(people[:BLOCKED_ACTIONS]):
        response = balancer.request("setup", "POST", "/api/validator/check", headers={
            "Authorization": f"Bearer {person['token']}"}, json={
            "history": [{"actor": "external", "name": "jane@initech.test", "content": "Can you send me the report?"}],
            "action": {"tool": "send_email", "arguments": {"to": ["jane@initech.test"], "subject": f"Report {n}",
                                                           "body": "Here it is."},
                       "justification": '"Can you send me the report?"'},
        })
        body = response.json()
        if response.status_code != 200 or body.get("approved") is not False:
            raise RuntimeError(f"the setup's action was not blocked: {response.status_code} {body}")
        blocked.append({"decision_id": body["decision_id"], "token": person["token"]})
    return blocked


# --- Drivers --------------------------------------------------------------------------------------

TEXTS_SAID = ["hey", "what's on my calendar today?", "remind me what we decided about the launch",
              "thanks!", "can you summarize my week?", "who is on the design review?", "ok", "and tomorrow?"]


def linq_signed(payload: dict, secret: str) -> tuple[bytes, dict]:
    body = json.dumps(payload).encode()
    ts = str(int(time.time()))
    signature = hmac.new(secret.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()
    return body, {"X-Webhook-Timestamp": ts, "X-Webhook-Signature": signature, "Content-Type": "application/json"}


def drive_texts(balancer: Balancer, people: list[dict], start: float, sent: list, errors: list) -> None:
    """300 texts across the 40 conversations: bursts of 1 to 3 texts a second apart (one debounce
    window), the bursts 6 to 30 s apart, the whole spread over the first 150 s."""
    from tests.fakes import linq, twilio_api

    per = [TEXTS // CONVERSATIONS + (1 if n < TEXTS % CONVERSATIONS else 0) for n in range(CONVERSATIONS)]

    def converse(n: int, person: dict) -> None:
        rng = random.Random(n)
        time.sleep(max(0.0, start + rng.uniform(0, 20) - time.time()))
        left = per[n]
        while left:
            burst = min(left, rng.choice((1, 2, 3)))
            for _ in range(burst):
                text = rng.choice(TEXTS_SAID)
                try:
                    if person["sms"]:
                        params = twilio_api.inbound_params(sender=person["phone"], to=person["line"], body=text)
                        url = f"{TWILIO_PUBLIC_BASE}/channels/sms/webhook"
                        response = balancer.request("webhook sms", "POST", "/channels/sms/webhook", data=params,
                                                    headers={"X-Twilio-Signature": twilio_api.signature(url, params)})
                    else:
                        payload = linq.message_received(sender=person["phone"], line=person["line"], text=text,
                                                        chat_id=person["chat_id"])
                        body, headers = linq_signed(payload, linq.WEBHOOK_SECRET)
                        response = balancer.request("webhook imessage", "POST", "/channels/imessage/webhook",
                                                    content=body, headers=headers)
                    if response.status_code != 200:
                        errors.append(f"text {person['email']}: {response.status_code} {response.text[:200]}")
                    sent.append(person["email"])
                except Exception as exc:  # counted as an error, the other conversations go on
                    errors.append(f"text {person['email']}: {exc!r}")
                left -= 1
                time.sleep(rng.uniform(0.3, 1.0))
            time.sleep(rng.uniform(6, 30) * (1 if time.time() - start < 120 else 0.3))

    with ThreadPoolExecutor(CONVERSATIONS) as pool:
        list(pool.map(lambda pair: converse(*pair), enumerate(people)))


def drive_authorizations(balancer: Balancer, blocked: list[dict], results: list) -> None:
    """Five authorizations of each blocked action, all 100 released at once."""
    attempts = [action for action in blocked for _ in range(AUTHORIZATIONS // BLOCKED_ACTIONS)]
    barrier = threading.Barrier(len(attempts))

    def authorize(action: dict) -> None:
        barrier.wait()
        response = balancer.request("authorize", "POST", f"/api/validator/decisions/{action['decision_id']}/authorize",
                                    headers={"Authorization": f"Bearer {action['token']}"})
        results.append((action["decision_id"], response.status_code))

    with ThreadPoolExecutor(len(attempts)) as pool:
        list(pool.map(authorize, attempts))


def drive_slack(balancer: Balancer, start: float, statuses: list) -> None:
    """Each event once, then Slack's retries of it (X-Slack-Retry-Num 1 and 2, as after a timeout)."""
    from tests.fakes import slack_api

    for n in range(SLACK_EVENTS):
        time.sleep(max(0.0, start + 10 + n * 3 - time.time()))
        payload = {"token": "legacy", "team_id": slack_api.TEAM_ID, "api_app_id": "A0LINDY", "type": "event_callback",
                   "event": slack_api.member_joined(f"C0LOAD{n:04d}"), "event_id": f"EvLOAD{n:06d}",
                   "event_time": int(time.time()),
                   "authorizations": [{"team_id": slack_api.TEAM_ID, "user_id": slack_api.BOT_USER_ID, "is_bot": True}]}
        body = json.dumps(payload).encode()
        for retry in range(3):
            ts = str(int(time.time()))
            signature = "v0=" + hmac.new(slack_api.SIGNING_SECRET.encode(), f"v0:{ts}:".encode() + body,
                                         hashlib.sha256).hexdigest()
            headers = {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature,
                       "Content-Type": "application/json"}
            if retry:
                headers.update({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"})
            response = balancer.request("slack events", "POST", "/slack/events", content=body, headers=headers)
            statuses.append(response.status_code)
            time.sleep(0.5)


def trigger_hydrations(count: int) -> int:
    from hydration import services as hydration
    from lindy.models import User
    from memory import services as memory

    started = 0
    for user in User.objects.filter(email__startswith="load").order_by("email")[:count]:
        hydration.run_trigger(filesystem=memory.filesystem_for_user(user), trigger="manual", user=user)
        started += 1
    return started


# --- Results --------------------------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def read_locust(prefix: Path) -> tuple[dict, list]:
    stats: dict[str, dict] = {}
    with open(f"{prefix}_stats.csv") as f:
        for row in csv.DictReader(f):
            stats[row["Name"]] = {"count": int(row["Request Count"]), "failures": int(row["Failure Count"]),
                                  "p50": float(row["50%"] or 0), "p95": float(row["95%"] or 0),
                                  "rps": float(row["Requests/s"] or 0)}
    failures = []
    if Path(f"{prefix}_failures.csv").exists():
        with open(f"{prefix}_failures.csv") as f:
            failures = list(csv.DictReader(f))
    return stats, failures


def settled(queues: list[str]) -> bool:
    from channels_app.models import InboundBundle, InboundMessage, SlackEvent
    from hydration.models import Run
    from lindy.celery import app

    if InboundMessage.objects.filter(bundle__isnull=True).exists():
        return False
    if InboundBundle.objects.exclude(status__in=[InboundBundle.Status.DISPATCHED, InboundBundle.Status.FAILED]).exists():
        return False
    if SlackEvent.objects.exclude(status__in=[SlackEvent.Status.DONE, SlackEvent.Status.FAILED]).exists():
        return False
    if Run.objects.filter(status__in=Run.ACTIVE).exists():
        return False
    with app.connection_for_write() as conn:
        return all(conn.default_channel.client.llen(name) == 0 for name in queues)


def run_sweeps() -> dict:
    from channels_app import services as channels
    from hydration import services as hydration

    return {"debounce": channels.debounce_recover(include_waiting=True),
            "slack": channels.slack_events_recover(), "hydration": len(hydration.runs_recover())}


def count_outcomes(people: list[dict], linq_fake, twilio_fake, authorizations: list, texts_sent: int,
                   blocked: list[dict]) -> dict:
    from agent.models import OutboxEntry
    from channels_app.models import InboundBundle, InboundMessage, OutboundMessage, SlackChannel, SlackEvent
    from hydration.models import Run

    ids = [p["user_id"] for p in people]
    inbound = InboundMessage.objects.filter(profile__user_id__in=ids)
    bundles = InboundBundle.objects.filter(conversation__profile__user_id__in=ids)
    dispatched = Counter(bundles.filter(status=InboundBundle.Status.DISPATCHED)
                         .values_list("conversation__profile__user_id", flat=True))
    # An answer is a message the agent sent the user (a consent notice rides on the first one).
    answers = Counter(OutboundMessage.objects.filter(user_id__in=ids, status=OutboundMessage.Status.SENT)
                      .values_list("user_id", flat=True))
    provider_sends = len(linq_fake.sends()) + len(twilio_fake.sends())
    # Every text is in a bundle, and every bundle (one debounce window's texts) gets exactly one
    # answer: per person, as many answers as bundles. A bundle the sweep marked failed because the
    # agent had already acted when its worker was killed counts like any other: answered or not.
    handed = Counter(bundles.values_list("conversation__profile__user_id", flat=True))
    lost = inbound.filter(bundle__isnull=True).count()
    unanswered = sum(max(0, handed[u] - answers[u]) for u in ids)
    doubled = sum(max(0, answers[u] - handed[u]) for u in ids)
    by_decision = Counter(OutboxEntry.objects.filter(decision_id__in=[b["decision_id"] for b in blocked])
                          .values_list("decision_id", flat=True))
    auth_ok = Counter(d for d, status in authorizations if status == 200)
    # The demo's own Slack events (channels_app/demo_slack.py) are in the database too: count the load's.
    load_events = SlackEvent.objects.filter(event_id__startswith="EvLOAD")
    stuck = {
        "bundles": bundles.filter(status__in=[InboundBundle.Status.CLAIMED, InboundBundle.Status.DISPATCHING]).count(),
        "slack events": SlackEvent.objects.exclude(status=SlackEvent.Status.DONE).count(),
        "hydration runs": Run.objects.filter(status__in=Run.ACTIVE).count(),
    }
    return {
        "texts sent": texts_sent, "texts stored": inbound.count(), "bundles": bundles.count(),
        "bundles dispatched": sum(dispatched.values()), "answers sent": sum(answers.values()),
        "bundles failed after the agent acted": bundles.filter(status=InboundBundle.Status.FAILED).count(),
        "provider sends": provider_sends,
        "texts lost": lost + unanswered, "texts answered twice": doubled,
        "authorizations 200": sum(auth_ok.values()),
        "authorizations 409": sum(1 for _, status in authorizations if status == 409),
        "authorizations other": sum(1 for _, status in authorizations if status not in (200, 409)),
        "actions executed": len(by_decision), "actions executed twice": sum(1 for c in by_decision.values() if c > 1),
        "actions authorized twice": sum(1 for c in auth_ok.values() if c > 1),
        "slack events stored": load_events.count(),
        "slack events processed more than once": load_events.filter(attempts__gt=1).count(),
        "slack channels joined": SlackChannel.objects.filter(channel_id__startswith="C0LOAD").count(),
        "stuck": stuck,
    }


# --- The run --------------------------------------------------------------------------------------

def main() -> int:
    import tempfile

    workdir = Path(os.environ.get("LOADTEST_DIR") or tempfile.mkdtemp(prefix="lindy-loadtest-"))
    (workdir / "logs").mkdir(parents=True, exist_ok=True)
    log(f"working in {workdir}")
    processes: list[Process] = []
    from tests.fakes.linq import FakeLinq
    from tests.fakes.slack_api import FakeSlack
    from tests.fakes.twilio_api import FakeTwilio

    with FakeLinq() as linq_fake, FakeTwilio() as twilio_fake, FakeSlack() as slack_fake:
        env = product_environment(workdir / "var", {**linq_fake.settings(), **twilio_fake.settings(),
                                                    **slack_fake.settings()})
        os.environ.update(env)
        os.environ["DJANGO_SETTINGS_MODULE"] = "lindy.settings"
        try:
            return _run(env, workdir, processes, linq_fake, twilio_fake, slack_fake)
        finally:
            for process in processes:
                process.kill()
            try:
                from django.db import connections

                connections.close_all()
                if not os.environ.get("LOADTEST_KEEP_DATABASE"):
                    drop_database()
            except Exception as exc:  # the result stands; say what was left behind
                log(f"could not drop the database: {exc!r}")


def _run(env, workdir, processes, linq_fake, twilio_fake, slack_fake) -> int:
    import redis

    log("fresh database and Redis db, migrate, seed_demo")
    fresh_database()
    redis.Redis.from_url(REDIS_URL).flushdb()
    manage(env, "migrate", "--noinput")
    manage(env, "seed_demo")

    import logging

    import django

    django.setup()
    logging.disable(logging.INFO)  # the figures are the output; the product processes log to their files
    from lindy.queue import all_queues

    setup = create_people(slack_fake)
    people = setup["people"]
    queues = all_queues()

    logs = workdir / "logs"
    ports = [free_port(), free_port()]
    gunicorn = [str(BIN / "gunicorn"), "-c", "gunicorn.conf.py", "lindy.wsgi"]
    webs = [Process(f"web{i + 1}", gunicorn, {**env, "PORT": str(port)}, logs) for i, port in enumerate(ports)]
    celery = [str(BIN / "celery"), "-A", "lindy"]
    workers = [Process(f"worker{i + 1}", [*celery, "worker", "--loglevel=info", "-Q", ",".join(queues),
                                          "--concurrency=2", "-n", f"load{i + 1}@%h"], env, logs) for i in range(2)]
    beat = Process("beat", [*celery, "beat", "--loglevel=info", "--scheduler", "lindy.beat:SingleBeatScheduler",
                            "--pidfile="], env, logs)
    processes.extend([*webs, *workers, beat])
    for process in processes:
        process.start()
    for port in ports:
        wait_ready(port)
    for worker in workers:
        wait_worker_ready(worker)
    log(f"2 web processes on ports {ports} (gunicorn, {env['WEB_CONCURRENCY']} workers each), 2 Celery workers on "
        f"{len(queues)} queues, 1 beat")

    balancer = Balancer(ports)
    blocked = block_actions(balancer, people)
    balancer.latencies.clear()
    balancer.statuses.clear()

    # Warm each web worker once (first requests import and compile), then the clock starts.
    for _ in range(8):
        balancer.request("warm", "GET", "/healthz")

    prefix = workdir / "locust"
    members = ",".join(["user@acme.test"] + [p["email"] for p in people])
    sign_in(members.split(",") + ["admin@acme.test", "admin@globex.test", "support@lindy.test", "ops@lindy.test"],
            workdir / "sessions.json")
    locust = Process("locust", [str(BIN / "locust"), "-f", str(ROOT / "loadtest" / "locustfile.py"), "--headless",
                                "-u", str(USERS), "-r", "10", "-t", f"{SECONDS}s", "--csv", str(prefix),
                                "--only-summary", "--stop-timeout", "10", "--loglevel", "WARNING"],
                     {**env, "LOADTEST_HOSTS": ",".join(balancer.bases), "LOADTEST_MEMBERS": members,
                      "LOADTEST_SESSIONS": str(workdir / "sessions.json")}, logs)
    start = time.time()
    locust.start()
    processes.append(locust)
    log(f"load for {SECONDS} s: {USERS} people, {TEXTS} texts in {CONVERSATIONS} conversations, "
        f"{AUTHORIZATIONS} authorizations of {BLOCKED_ACTIONS} blocked actions, {SLACK_EVENTS} Slack events x3")

    texts_sent: list[str] = []
    driver_errors: list[str] = []
    authorizations: list[tuple[int, int]] = []
    slack_statuses: list[int] = []
    chaos: list[str] = []

    def at(offset: float) -> None:
        time.sleep(max(0.0, start + offset - time.time()))

    def chaos_script() -> None:
        at(SECONDS * 0.22)
        for worker in workers:  # each worker consumes every queue: killing it kills a worker of each queue
            workers_killed_at = time.time() - start
            worker.kill()
            chaos.append(f"{workers_killed_at:5.1f} s: SIGKILL {worker.name} (master and pool)")
            time.sleep(3)
            worker.start()
            wait_worker_ready(worker)
            chaos.append(f"{time.time() - start:5.1f} s: {worker.name} started again and ready")
            if worker is workers[0]:
                at(SECONDS * 0.45)
                web = webs[0]
                chaos.append(f"{time.time() - start:5.1f} s: restart {web.name} (TERM, requests in flight finish)")
                web.stop()
                web.start()
                wait_ready(ports[0])
                chaos.append(f"{time.time() - start:5.1f} s: {web.name} serving again")
                at(SECONDS * 0.65)

    def hydrations() -> None:
        at(15)
        chaos.append(f"{time.time() - start:5.1f} s: {trigger_hydrations(HYDRATIONS)} hydration runs asked for")

    def authorize_later() -> None:
        at(SECONDS * 0.3)
        drive_authorizations(balancer, blocked, authorizations)

    threads = [threading.Thread(target=fn, daemon=True) for fn in (
        lambda: drive_texts(balancer, people, start, texts_sent, driver_errors),
        authorize_later, lambda: drive_slack(balancer, start, slack_statuses), chaos_script, hydrations)]
    for thread in threads:
        thread.start()
    locust.proc.wait(SECONDS + 120)
    for thread in threads:
        thread.join(timeout=max(1.0, start + SECONDS + 120 - time.time()))
    load_seconds = time.time() - start
    log(f"load done after {load_seconds:.0f} s; waiting for the work to settle (up to {SETTLE_SECONDS} s)")

    deadline = time.time() + SETTLE_SECONDS
    while time.time() < deadline and not settled(queues):
        time.sleep(2)
    settle_seconds = time.time() - (start + load_seconds)
    sweeps = run_sweeps()
    deadline = time.time() + 60
    time.sleep(3)
    while time.time() < deadline and not settled(queues):
        time.sleep(2)
    outcomes = count_outcomes(people, linq_fake, twilio_fake, authorizations, len(texts_sent), blocked)
    stats, failures = read_locust(prefix)
    return report(stats, failures, balancer, outcomes, chaos, driver_errors, slack_statuses, sweeps,
                  load_seconds, settle_seconds, workdir)


def report(stats, failures, balancer, outcomes, chaos, driver_errors, slack_statuses, sweeps, load_seconds,
           settle_seconds, workdir) -> int:
    lines = []
    say = lines.append
    say("")
    say("== Lindy load test ==")
    say("2 gunicorn web processes, 2 Celery workers on every queue, 1 beat; PostgreSQL and Redis; offline model")
    for event in chaos:
        say(f"  {event}")
    total = stats.get("Aggregated", {"count": 0, "rps": 0.0})
    webhook_count = sum(len(v) for v in balancer.latencies.values())
    say(f"requests: {total['count']} from the {USERS} people ({total['rps']:.1f}/s) + {webhook_count} webhook and "
        f"authorization requests ({webhook_count / load_seconds:.1f}/s) in {load_seconds:.0f} s")
    trivial = stats.get("trivial", {}).get("p95", 0.0)
    say(f"{'page group':<18}{'requests':>9}{'p50 ms':>9}{'p95 ms':>9}{'p95/trivial':>13}")
    goal_failures = []
    for name, row in sorted(stats.items()):
        if name == "Aggregated" or name.startswith("retry "):
            continue
        ratio = row["p95"] / trivial if trivial else 0.0
        flag = ""
        if name == "healthz":
            flag = "  (the liveness probe: no session, no page; no goal)"
        elif name != "trivial" and row["count"] < MIN_SAMPLES:
            flag = f"  (fewer than {MIN_SAMPLES} requests: no goal)"
        elif name != "trivial" and ratio > TRIVIAL_RATIO_GOAL:
            flag = "  FAIL (goal <= 3x)"
            goal_failures.append(f"{name} p95 {ratio:.1f}x the trivial view's")
        say(f"{name:<18}{row['count']:>9}{row['p50']:>9.0f}{row['p95']:>9.0f}{ratio:>12.1f}x{flag}")
    for name, values in sorted(balancer.latencies.items()):
        say(f"{name:<18}{len(values):>9}{percentile(values, .5) * 1000:>9.0f}{percentile(values, .95) * 1000:>9.0f}"
            f"{'':>13}  (statuses {dict(balancer.statuses[name])})")
    retried = sum(row["count"] for name, row in stats.items() if name.startswith("retry "))
    retried += sum(balancer.retries.values())
    errors = [f for f in failures if not f["Name"].startswith("retry ") and "retried:" not in f["Error"]]
    error_count = sum(int(f["Occurrences"]) for f in errors)
    server_errors = sum(int(f["Occurrences"]) for f in errors if "5" == f["Error"].split()[0][:1])
    server_errors += sum(count for statuses in balancer.statuses.values() for code, count in statuses.items()
                         if code >= 500)
    error_count += len(driver_errors) + sum(1 for s in slack_statuses if s != 200)
    say(f"errors: {error_count} ({server_errors} server errors); retried during the web restart or a refused "
        f"connection: {retried} {dict(balancer.retries) or ''}")
    for failure in errors[:10]:
        say(f"  {failure['Method']} {failure['Name']}: {failure['Error']} x{failure['Occurrences']}")
    for error in driver_errors[:10]:
        say(f"  {error}")
    o = outcomes
    say(f"texts: {o['texts sent']} sent, {o['texts stored']} stored, {o['bundles']} bundles "
        f"({o['bundles dispatched']} dispatched, {o['bundles failed after the agent acted']} marked failed by the sweep: "
        f"their worker was killed after the agent acted, so they are not run again), {o['answers sent']} answers sent")
    say(f"texts lost: {o['texts lost']}   texts answered twice: {o['texts answered twice']}")
    say(f"authorizations: {o['authorizations 200']} ran, {o['authorizations 409']} refused as already resolved, "
        f"{o['authorizations other']} other; actions executed {o['actions executed']}, "
        f"executed twice: {o['actions executed twice']}")
    say(f"slack: {len(slack_statuses)} deliveries, {o['slack events stored']} events stored, "
        f"{o['slack channels joined']} channels joined, {o['slack events processed more than once']} taken twice")
    stuck_total = sum(o["stuck"].values())
    say(f"stuck after the sweeps ({sweeps}): {stuck_total} {o['stuck']}; settled {settle_seconds:.0f} s after the load")

    if error_count:
        goal_failures.append(f"{error_count} errors")
    if server_errors:
        goal_failures.append(f"{server_errors} server errors")
    if o["texts lost"] or o["texts answered twice"] or o["texts stored"] != o["texts sent"]:
        goal_failures.append("texts lost or answered twice")
    if o["actions executed twice"] or o["authorizations 200"] != BLOCKED_ACTIONS or o["actions executed"] != BLOCKED_ACTIONS:
        goal_failures.append("authorizations not exactly once")
    if stuck_total:
        goal_failures.append("work left stuck")
    if o["slack channels joined"] != SLACK_EVENTS:
        goal_failures.append("slack events not all processed")
    if o["slack events stored"] != SLACK_EVENTS:
        goal_failures.append("slack retries stored as new events")
    say("PASS" if not goal_failures else "FAIL: " + "; ".join(goal_failures))
    print("\n".join(lines), flush=True)
    (workdir / "summary.txt").write_text("\n".join(lines) + "\n")
    (workdir / "summary.json").write_text(json.dumps({"locust": stats, "outcomes": outcomes, "chaos": chaos,
                                                      "retries": dict(balancer.retries)}, indent=2, default=str))
    return 0 if not goal_failures else 1


if __name__ == "__main__":
    sys.exit(main())
