"""Redis down, product up: with the cache and the broker pointed at a closed port, nothing answers
500. /readyz says what is down (503), routing reads the database, a hydration run that could not
be queued says so and is retried, and webhooks still store what arrives."""

from __future__ import annotations

import socket
import time

import pytest
from celery.exceptions import Reject
from django.test import Client, override_settings
from kombu import pools as kombu_pools

from channels_app import services as channels_services
from channels_app.models import InboundMessage, SlackChannel, SlackEvent
from channels_app.services import queue as channels_queue
from hydration import services as hydration_services
from hydration import tasks as hydration_tasks
from hydration.models import Run
from lindy.celery import app as celery_app
from memory import services as memory_services
from router import routing
from tests.channels_app.factories import SendingNumberFactory, SlackInstallationFactory, TextingProfileFactory
from tests.conftest import client_for
from tests.fakes.linq import FakeLinq, message_received, signed
from tests.fakes.slack_api import FakeSlack, member_joined, signed_event

pytestmark = pytest.mark.django_db

SEND = {"tool": "send_email", "arguments": {"to": ["jane@initech.test"], "subject": "Report", "body": "Here."}}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed when the socket is: nothing listens there


def _swap_broker(url: str, transport_options: dict, publish_retry: bool) -> tuple:
    conf = celery_app.conf
    before = (conf.broker_url, conf.broker_transport_options, conf.task_publish_retry)
    conf.broker_url, conf.broker_transport_options, conf.task_publish_retry = url, transport_options, publish_retry
    # Producers and connections are pooled in kombu's process-wide registry, keyed by URL: reset it
    # (closing a pool in place would leave a closed pool there for the next test's sends).
    kombu_pools.reset()
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    return before


@pytest.fixture
def redis_down():
    """The cache and the broker at a port nothing listens on, failing fast (no retries, short
    socket timeouts), as when Redis is stopped."""
    url = f"redis://127.0.0.1:{_closed_port()}/0"
    caches = {"default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url, "KEY_PREFIX": "down",
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
    }}
    before = _swap_broker(url, {"socket_connect_timeout": 0.5, "socket_timeout": 0.5, "max_retries": 0}, False)
    with override_settings(CACHES=caches, CELERY_BROKER_URL=url):
        yield url
    _swap_broker(*before)


@pytest.fixture
def broker_sent(monkeypatch):
    sent = []
    monkeypatch.setattr(hydration_tasks.hydrate, "apply_async", lambda args=(), kwargs=None, **_: sent.append(args[0]))
    return sent


def test_readyz_is_200_json_when_everything_is_up(db):
    response = Client().get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["database"] == "ok" and body["cache"] == "ok" and body["broker"] == "ok"
    assert body["failing"] == []


def test_readyz_is_503_json_naming_cache_and_broker_when_redis_is_down(redis_down):
    started = time.monotonic()
    response = Client().get("/readyz")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["database"] == "ok"
    assert body["cache"].startswith("error") and body["broker"].startswith("error")
    assert body["failing"] == ["cache", "broker"]
    assert time.monotonic() - started < 20  # the connect timeout (5 s), not a hang; loose for a loaded machine
    assert Client().get("/healthz").status_code == 200  # the process itself is alive


def test_routing_falls_back_to_the_database_and_logs_once(cast, redis_down, caplog):
    routing.forget_local()  # no table kept in this process from before the outage
    with caplog.at_level("WARNING"):
        first = routing.assign("agent", cast.member)
        second = routing.assign("agent", cast.member)
    assert first.target.name == second.target.name == routing.DEFAULT_TARGET
    assert sum("cache" in r.getMessage() and "once" in r.getMessage() for r in caplog.records) == 1


def test_a_routing_change_during_the_outage_is_seen_at_once(cast, redis_down):
    from router.models import ModelChoice, Target

    routing.forget_local()
    assert routing.assign("agent", cast.member).reason != "explicit_choice"
    haiku = Target.objects.get(name="claude-haiku-4-5-anthropic")
    ModelChoice.objects.create(user=cast.member, route="", target=haiku)  # the signal bumps the version
    chosen = routing.assign("agent", cast.member)
    assert chosen.reason == "explicit_choice" and chosen.target.name == haiku.name


def test_my_model_page_works_with_redis_down(cast, redis_down):
    routing.forget_local()
    response = client_for(cast.member).get("/router/my-model/")
    assert response.status_code == 200
    assert routing.DEFAULT_TARGET in response.content.decode()


def test_validator_check_works_with_redis_down(cast, redis_down, api_for):
    routing.forget_local()
    response = api_for(cast.member).post("/api/validator/check", {
        "history": [{"actor": "external", "name": "jane@initech.test", "content": "Can you send me the report?"}],
        "action": {**SEND, "justification": 'She asked "Can you send me the report?"'},
    })
    assert response.status_code == 200, response.content[:300]
    assert response.json()["approved"] is False


@pytest.mark.django_db(transaction=True)  # as in production: the enqueue runs when the trigger commits
def test_run_now_with_the_broker_down_is_marked_and_the_next_click_retries(cast, redis_down):
    fs = memory_services.filesystem_for_user(cast.member)
    client = client_for(cast.member)
    response = client.post(f"/hydration/{fs.pk}/run", follow=True)
    assert response.status_code == 200
    run = Run.objects.get(filesystem=fs)
    assert run.status == Run.Status.ENQUEUE_FAILED and not run.is_active
    page = response.content.decode()
    assert "could not be queued" in page.lower() and "already in progress" not in page
    # The run page shows the status; the next click makes a new attempt instead of "already in progress".
    assert "Could not be queued" in client.get(f"/hydration/runs/{run.pk}/").content.decode()
    again = client.post(f"/hydration/{fs.pk}/run", follow=True).content.decode()
    assert "already in progress" not in again
    assert Run.objects.filter(filesystem=fs).count() == 2
    assert not Run.objects.filter(filesystem=fs, status__in=Run.ACTIVE).exists()


def test_api_run_start_with_the_broker_down_answers_without_a_500(cast, redis_down, api_for,
                                                                  django_capture_on_commit_callbacks):
    fs = memory_services.filesystem_for_user(cast.member)
    with django_capture_on_commit_callbacks(execute=True):
        response = api_for(cast.member).post(f"/api/hydration/filesystems/{fs.pk}/runs")
    assert response.status_code == 201, response.content[:300]  # the run is stored; its enqueue failed after
    assert Run.objects.get(filesystem=fs).status == Run.Status.ENQUEUE_FAILED


def test_the_dispatch_sweep_queues_a_run_that_could_not_be_queued(cast, broker_sent, django_capture_on_commit_callbacks):
    fs = memory_services.filesystem_for_user(cast.member)
    run, _ = hydration_services.run_trigger(filesystem=fs, trigger=Run.Trigger.MANUAL, enqueue=False)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.ENQUEUE_FAILED)
    with django_capture_on_commit_callbacks(execute=True):
        hydration_tasks.dispatch_due()
    run.refresh_from_db()
    assert run.status == Run.Status.QUEUED and broker_sent == [run.pk]
    with django_capture_on_commit_callbacks(execute=True):
        hydration_tasks.dispatch_due()
    assert broker_sent == [run.pk]  # queued once: it is live now, not failed


def test_linq_webhook_stores_the_message_with_the_broker_down(cast, redis_down, django_capture_on_commit_callbacks,
                                                              monkeypatch):
    with FakeLinq() as linq, override_settings(**linq.settings()):
        line = SendingNumberFactory()
        TextingProfileFactory(user=cast.member, phone="+16505550001")
        body, headers = signed(message_received(sender="+16505550001", line=line.phone, text="hi"))
        started = time.monotonic()
        with django_capture_on_commit_callbacks(execute=True):
            response = Client().post("/channels/imessage/webhook", body, content_type="application/json", **headers)
    assert response.status_code == 200, response.content[:300]
    message = InboundMessage.objects.get(text="hi")
    assert time.monotonic() - started < 20  # the connect timeout (5 s), not a hang; loose for a loaded machine
    # Once the broker is back, the recovery sweep (beat) queues the stored message's conversation.
    fired = []
    monkeypatch.setattr(channels_queue, "task_send", lambda name, *args, **kwargs: fired.append((name, args[0])))
    channels_services.debounce_recover(include_waiting=True)
    assert (channels_queue.DEBOUNCE_FIRE, message.conversation_id) in fired


def test_slack_events_are_stored_with_redis_down(cast, redis_down, django_capture_on_commit_callbacks):
    with FakeSlack() as slack, override_settings(**slack.settings()):
        SlackInstallationFactory(team=cast.team)
        slack.add_channel("C0NEW", "general", private=False)
        body, headers = signed_event(member_joined("C0NEW"))
        with django_capture_on_commit_callbacks(execute=True):
            response = Client().post("/slack/events", body, content_type="application/json", **headers)
    assert response.status_code == 200, response.content[:300]
    # Stored, though its task could not be queued: the recovery sweep (beat) queues it later.
    event = SlackEvent.objects.get(event_type="member_joined_channel")
    assert event.status == SlackEvent.Status.PENDING
    assert not SlackChannel.objects.filter(channel_id="C0NEW").exists()


def test_the_slack_sweep_queues_an_event_whose_task_was_lost(cast, monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    fired = []
    monkeypatch.setattr(channels_queue, "task_send", lambda name, *args, **kwargs: fired.append((name, args[0])))
    event = SlackEvent.objects.create(event_id="Ev0LOST", body="{}", received_at=timezone.now() - timedelta(minutes=2))
    assert channels_services.slack_events_recover() == 1
    assert fired == [(channels_queue.SLACK_EVENT_PROCESS, event.pk)]


def test_following_a_suggestion_with_the_broker_down_changes_nothing(cast, redis_down):
    from tests.validator.test_views import blocked_payment

    decision = blocked_payment(cast)
    events = decision.task.events.count()
    response = client_for(cast.member).post(f"/validator/decisions/{decision.pk}/follow/", follow=True)
    assert response.status_code == 200
    assert "task queue is unreachable" in response.content.decode()
    decision.refresh_from_db()
    assert decision.status == "blocked" and decision.task.events.count() == events


def test_a_scheduled_run_the_broker_never_got_is_marked_and_the_sweep_queues_it(cast, redis_down, monkeypatch,
                                                                                django_capture_on_commit_callbacks):
    from datetime import timedelta

    from django.utils import timezone

    from hydration.models import Schedule

    fs = memory_services.filesystem_for_user(cast.member)
    hydration_services.schedule_ensure(filesystem_id=fs.pk)
    Schedule.objects.filter(filesystem=fs).update(next_run_at=timezone.now() - timedelta(minutes=1))
    with django_capture_on_commit_callbacks(execute=True):
        created = hydration_services.schedule_dispatch()
    run = Run.objects.get(pk__in=created, filesystem=fs)
    # Not left queued under its 30-minute lease: "Run now" must not answer "already in progress".
    assert run.status == Run.Status.ENQUEUE_FAILED and not run.is_active
    again, fresh = hydration_services.run_trigger(filesystem=fs, trigger=Run.Trigger.MANUAL, enqueue=False)
    assert fresh
    again.delete()
    # The broker is back: the next dispatch tick queues it.
    sent = []
    monkeypatch.setattr(hydration_tasks.hydrate, "apply_async", lambda args=(), kwargs=None, **_: sent.append(args[0]))
    with django_capture_on_commit_callbacks(execute=True):
        hydration_tasks.dispatch_due()
    run.refresh_from_db()
    assert run.status == Run.Status.QUEUED and run.pk in sent


def test_a_run_waiting_for_budget_that_cannot_be_queued_again_is_marked(cast, redis_down):
    from router.budgets import BudgetExhausted

    fs = memory_services.filesystem_for_user(cast.member)
    run, _ = hydration_services.run_trigger(filesystem=fs, trigger=Run.Trigger.MANUAL, enqueue=False)
    Run.objects.filter(pk=run.pk).update(attempts=1, stage="Waiting for the model provider's budget")

    def out_of_budget(*, run_id, task_id=""):
        raise BudgetExhausted("anthropic", retry_after=5)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hydration_services, "run_execute", out_of_budget)
        # A delivery from the broker (not eager, not called directly): retry() publishes again.
        hydration_tasks.hydrate.push_request(id="task-1", called_directly=False, retries=0, args=[run.pk], kwargs={})
        try:
            with pytest.raises(Reject):  # Celery's wrapping of the broker's refusal
                hydration_tasks.hydrate.run(run.pk)
        finally:
            hydration_tasks.hydrate.pop_request()
    run.refresh_from_db()
    assert run.status == Run.Status.ENQUEUE_FAILED and not run.is_active


def test_recover_with_the_broker_down_leaves_the_run_for_the_next_sweep(cast, redis_down, monkeypatch):
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    fs = memory_services.filesystem_for_user(cast.member)
    run, _ = hydration_services.run_trigger(filesystem=fs, trigger=Run.Trigger.MANUAL, enqueue=False)
    quiet = timezone.now() - timedelta(seconds=settings.HYDRATION_HEARTBEAT_STALE_SECONDS + 5)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, attempts=1, started_at=quiet, heartbeat_at=quiet)
    assert hydration_services.runs_recover() == []
    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING and run.requeued_at is None
    sent = []
    monkeypatch.setattr(hydration_tasks.hydrate, "apply_async", lambda args=(), kwargs=None, **_: sent.append(args[0]))
    assert hydration_services.runs_recover() == [run.pk] and sent == [run.pk]


def test_an_eval_run_the_broker_never_got_says_so_instead_of_staying_queued(cast, redis_down, api_for,
                                                                            django_capture_on_commit_callbacks):
    from router.models import EvalRun

    with django_capture_on_commit_callbacks(execute=True):
        response = api_for(cast.superuser).post("/api/router/routes/validator/evals",
                                                {"target": "offline-rules", "variant": "default"})
    assert response.status_code == 201, response.content[:300]
    run = EvalRun.objects.get(pk=response.json()["id"])
    # Not "queued" forever: no sweep re-queues eval runs, so it says it never started and can be run again.
    assert run.status == EvalRun.Status.FAILED and "could not be queued" in run.error.lower()


def test_a_context_initialization_the_broker_never_got_says_so(cast, redis_down):
    from drafting.learner import initialization
    from drafting.models import ContextInit

    init = initialization.context_init_start(user=cast.member)  # no 500 for the page that asked
    init.refresh_from_db()
    assert init.status == ContextInit.Status.FAILED and "could not be queued" in init.error.lower()


def test_a_finished_run_is_scored_in_place_when_the_broker_refuses_its_score(cast, redis_down,
                                                                            django_capture_on_commit_callbacks):
    from agent import loop as agent_loop
    from analyst.models import ScoredCall, TaskScore
    from lindy import services as lindy_services

    task = lindy_services.task_create(team=cast.team, owner=cast.member, title="Hello")
    lindy_services.task_event_add(task=task, actor="user", name="", content="Send an email to jane@initech.test saying hi.")
    with django_capture_on_commit_callbacks(execute=True):
        result = agent_loop.run(task)
    score = TaskScore.objects.get(task=task)
    assert score.through_seq == task.events.order_by("-seq").first().seq and score.stopped == result.stopped
    assert set(ScoredCall.objects.filter(task_score=score).values_list("route", flat=True)) == {"agent", "validator"}
