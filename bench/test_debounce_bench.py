"""`make bench`: the 3 s debounce while hydration and evals run.

Real Celery workers on Redis, one per queue class as the Procfile runs them (channels on prefork;
agent, hydration and evals on the threads pool; the agent worker takes the
hand-over of each claimed bundle). The model is the fake with 2 s latency (router.fake_model), and
more hydration runs are queued than the hydration worker has threads, so the model-bound queues are
saturated; offline eval runs are queued too, then several people
text the assistant (two messages each, half a second apart). Prints the p95 of the time from a
conversation's last message (its stored arrival, where the window starts) to the agent being handed
its bundle, first on idle workers, then under that load, with the stages (to the agent worker's
claim of the bundle, then to the handler's call):
`debounce: p95 X s after the last message (goal ≤ 3.3 s) PASS/FAIL`. The p95 is taken within the
samples (`method="inclusive"`): the default method extrapolates past the largest of a dozen samples.
"""

from __future__ import annotations

import statistics
import time

import pytest
from django.conf import settings
from django.test import Client, override_settings
from django.utils import timezone
from ratios import record_absolute

GOAL_SECONDS = 3.3
CONVERSATIONS = 12
THREADS = 150  # the threaded workers' threads (LINDY_WORKER_THREADS's default on PostgreSQL)
HYDRATIONS = 160  # more than the hydration worker's threads
MEETINGS = 5  # per hydration
EVALS = 6
# The Procfile's background workers (hydration, evals, drafting) run at this CPU priority (`nice -n`).
BACKGROUND_NICE = 10
# The channels worker keeps its connections as in production (DB_CONN_MAX_AGE's default); the threaded
# workers share a psycopg pool of this size a process, as the Procfile's (a pool replaces persistence).
CONN_MAX_AGE = 60
DB_POOL = 20

pytestmark = pytest.mark.django_db(transaction=True)


def _send(profile, line, text, chat_id) -> None:
    from tests.fakes.linq import message_received, signed

    body, headers = signed(message_received(sender=profile.phone, line=line.phone, text=text, chat_id=chat_id))
    response = Client().post("/channels/imessage/webhook", body, content_type="application/json", **headers)
    assert response.status_code == 200, response.content


def test_debounce_while_hydration_and_evals_run(tmp_path, monkeypatch):
    if not settings.REDIS_URL:
        pytest.skip("the debounce bench needs Redis: set REDIS_URL or run a server on 127.0.0.1:6379")
    from channels_app.models import InboundBundle
    from hydration import services as hydration
    from hydration.models import Run
    from lindy import queue
    from lindy import services as core
    from lindy.celery import app
    from lindy.models import Membership
    from memory import services as memory
    from router import routing
    from router import services as router
    from router.models import EvalRun, Route, Target
    from tests.channels_app import recorder
    from tests.channels_app.factories import SendingNumberFactory, TextingProfileFactory
    from tests.factories import TeamFactory, member_of
    from tests.fakes.linq import FakeLinq
    from tests.fixtures.celery_worker import WorkerProcess
    from tests.seams import replaced

    app.loader.import_default_modules()  # every app's tasks, as a worker has them
    base = settings.CELERY_TASK_DEFAULT_QUEUE
    with app.connection_for_write() as conn:
        for name in queue.all_queues():
            conn.default_channel.queue_purge(name)
    workers = []
    with FakeLinq() as linq:
        wiring = {**linq.settings(), "LINDY_TEST_INBOUND_HANDLER": "tests.channels_app.recorder.record",
                  "CHANNELS_DEBOUNCE_SECONDS": "3", "LINDY_MODEL_OFFLINE": "1", "LINDY_FAKE_MODEL_LATENCY_MS": "2000", "LINDY_WORKER_THREADS": str(THREADS)}
        for key, value in wiring.items():
            monkeypatch.setenv(key, value)
        with override_settings(**linq.settings(), CHANNELS_DEBOUNCE_SECONDS=3), \
                replaced(inbound_handler=recorder.record):
            recorder.reset()
            try:
                # As the Procfile runs them: two processes for channels (prefork, persistent connections),
                # one threaded process each for the agent, hydration and evals, with a psycopg pool of
                # DB_POOL_MAX_SIZE; hydration and evals at a lower CPU priority.
                threaded = ("--pool=threads", f"--concurrency={THREADS}")
                pooled = {"DB_POOL_MAX_SIZE": str(DB_POOL)}
                for kind, pool, nice, env in (("channels", ("--pool=prefork", "--concurrency=2"), 0, {}),
                                              ("agent", threaded, 0, pooled),
                                              ("hydration", threaded, BACKGROUND_NICE, pooled),
                                              ("evals", threaded, BACKGROUND_NICE, pooled)):
                    workers.append(WorkerProcess(tmp_path / f"worker-{kind}.log").start(
                        *pool, queues=[f"{base}.{kind}"], nice=nice, conn_max_age=CONN_MAX_AGE, env=env))

                team = TeamFactory(name="Bench")
                people = [member_of(team, Membership.Role.MEMBER) for _ in range(max(HYDRATIONS, CONVERSATIONS))]
                profiles = []
                for n, person in enumerate(people[:CONVERSATIONS]):
                    line = SendingNumberFactory(phone=f"+1415555{n:04d}")
                    profiles.append((TextingProfileFactory(user=person, phone=f"+1650555{n:04d}", number=line), line))

                def converse(tag: str) -> list[dict[str, float]]:
                    """Each person texts twice, half a second apart. For each conversation, seconds from
                    its last message (stored: the window's start) to the agent being handed the bundle,
                    and the stages: the bundle's claim by the agent worker, then the handler's call."""
                    refs = {}
                    for n, (profile, line) in enumerate(profiles):
                        _send(profile, line, "hey", f"chat-{tag}-{n}")
                        time.sleep(0.5)
                        _send(profile, line, "what's on today?", f"chat-{tag}-{n}")
                        refs[f"imessage:chat-{tag}-{n}"] = profile
                    deadline = time.time() + 90
                    while time.time() < deadline:
                        calls = [c for c in recorder.calls() if c["conversation_ref"] in refs]
                        if len(calls) >= len(refs):
                            break
                        time.sleep(0.1)
                    assert len(calls) == len(refs), workers[0].log()
                    timings = []
                    for call in calls:
                        bundle = InboundBundle.objects.filter(conversation__profile=refs[call["conversation_ref"]]).latest("pk")
                        last = bundle.messages.latest("received_at").received_at.timestamp()
                        handed = bundle.handed_over_at.timestamp()
                        timings.append({"total": call["at"] - last, "to_claim": handed - last, "handler": call["at"] - handed})
                    return timings

                idle = converse("idle")

                # Load: hydration runs over meetings, and offline eval runs of the validator.
                for n, person in enumerate(people[:HYDRATIONS]):
                    for m in range(MEETINGS):
                        core.meeting_create(team=team, owner=person, title=f"Sync {n}-{m}", occurred_at=timezone.now(),
                                            notes=f"We always deploy service {n}-{m} to staging before prod.")
                    hydration.run_trigger(filesystem=memory.filesystem_for_user(person), trigger="manual", user=person)
                routing.ensure_defaults()
                offline = Target.objects.get(name="offline-rules")
                for _ in range(EVALS):
                    run = router.eval_run_create(route=Route.objects.get(name="validator"), target=offline,
                                                 variant="default", actor=None)
                    queue.enqueue("router.tasks.eval_run", run.pk)

                def busy() -> tuple[int, int]:
                    return (Run.objects.filter(status__in=Run.ACTIVE).count(),
                            EvalRun.objects.filter(status__in=[EvalRun.Status.QUEUED, EvalRun.Status.RUNNING]).count())

                busy_at_start = busy()
                loaded = converse("load")
                busy_at_end = busy()
            finally:
                for worker in workers:
                    worker.stop()
                recorder.reset()
    def p95(timings: list[dict[str, float]], key: str = "total") -> float:
        # Within the samples (inclusive): the default method extrapolates past the largest of a few.
        return statistics.quantiles([t[key] for t in timings], n=20, method="inclusive")[-1]

    record_absolute(
        "debounce, p95 after the last message", p95(loaded), GOAL_SECONDS, "s",
        note=f"idle workers, same run: {p95(idle):.2f} s; stages' p95 (idle / loaded): to the agent worker's claim "
        f"{p95(idle, 'to_claim'):.2f} / {p95(loaded, 'to_claim'):.2f} s, claim to handler {p95(idle, 'handler'):.2f} / "
        f"{p95(loaded, 'handler'):.2f} s; {CONVERSATIONS} conversations; hydration and eval runs "
        f"queued or running: {busy_at_start[0]} and {busy_at_start[1]} at the first message, "
        f"{busy_at_end[0]} and {busy_at_end[1]} when the last bundle reached the agent",
    )
