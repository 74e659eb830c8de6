"""One Celery queue per class of work, so the 3 s debounce never waits behind an agent run
(up to 10 min), a hydration (25 min) or an eval run (an hour): channels, agent, hydration and
evals each have their own queue, derived from CELERY_QUEUE, and the Procfile runs a worker for
each. Everything else (heartbeat, beat ticks, attachments) stays on the default queue."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from celery import current_app
from django.conf import settings

from lindy import queue

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = {
    "channels_app.tasks.debounce_fire": "channels",
    # The hand-over runs the agent loop (up to 10 min): it waits for an agent worker, never in
    # front of other conversations' debounce checks.
    "channels_app.tasks.bundle_dispatch": "agent",
    "channels_app.tasks.debounce_recover": "channels",
    "agent.tasks.agent_run": "agent",
    "validator.tasks.agent_run": "agent",
    # It calls Gmail and Calendar (with retries): agent work, never ahead of the debounce.
    "agent.tasks.outbox_resume": "agent",
    "hydration.tasks.hydrate": "hydration",
    "router.tasks.eval_run": "evals",
    "router.tasks.guardrails_check": "evals",
    "validator.tasks.eval_cell": "evals",
    # The learner: many model calls per run (replays and the judge), like an eval run; its hourly
    # cadence check only queues runs.
    "drafting.tasks.learner_run": "evals",
    "drafting.tasks.learner_init_fetch": "evals",
    "drafting.tasks.learner_init_compose": "evals",
    "drafting.tasks.learner_cadence": None,
    "router.tasks.optimization_run": "evals",
    # One draft (a model call and a Gmail write) per inbound mail: model-bound, so the drafting
    # queue's threaded worker (issue 31); the sweep only queues them.
    "drafting.tasks.item_process": "drafting",
    "drafting.tasks.items_process": "drafting",
    "drafting.tasks.sweep": None,
    # One scoring call after a task ends; the re-queue sweep and the hourly block-rate check are short.
    "analyst.tasks.task_score": None,
    # One triage call for a new or regressed failure group.
    "analyst.tasks.failure_triage": None,
    "router.tasks.optimization_recover": None,
    "validator.tasks.block_rate_anomalies": None,
    "lindy.tasks.heartbeat": None,
    "lindy.tasks.ping": None,
    "hydration.tasks.dispatch_due": None,
    # A sweep: it only re-queues a dead worker's run, so it must not wait behind hydration itself.
    "hydration.tasks.recover": None,
    "hydration.tasks.schedules_backfill": None,
    # Usually nothing to do; once a day, one day's decisions: a short statement, not a class of work.
    "validator.tasks.stats_rollup": None,
    "channels_app.tasks.attachment_store": None,
    "channels_app.tasks.ratio_alerts_check": None,
    # One short send: it does not hold up the debounce on the channels queue.
    "channels_app.tasks.consent_confirm": None,
    "channels_app.tasks.ratio_alert_notify": None,
    "validator.tasks.block_rate_alert_push": None,
    # A few Slack Web API calls per event; the sweep only re-queues.
    "channels_app.tasks.slack_event_process": None,
    "channels_app.tasks.slack_events_recover": None,
}


@pytest.fixture(autouse=True, scope="module")
def _every_task_registered():
    """What a worker does when it starts: import every app's tasks module."""
    from lindy.celery import app

    app.loader.import_default_modules()


def _queue_of(task_name: str) -> str:
    route = current_app.amqp.router.route({}, task_name, args=(), kwargs={})
    return route["queue"].name


@pytest.mark.parametrize("task_name, kind", EXPECTED.items())
def test_each_task_goes_to_its_class_queue_derived_from_celery_queue(task_name, kind):
    base = settings.CELERY_TASK_DEFAULT_QUEUE
    assert base.startswith("lindy-test-")  # the per-test-worker prefix from tests/pytest_env.py
    assert _queue_of(task_name) == (f"{base}.{kind}" if kind else base)


def test_every_registered_task_is_routed_on_purpose():
    ours = {name for name in current_app.tasks if not name.startswith("celery.")}
    assert ours == set(EXPECTED)


def test_all_queues_names_the_default_and_each_class():
    base = settings.CELERY_TASK_DEFAULT_QUEUE
    assert queue.all_queues() == [base, f"{base}.channels", f"{base}.agent", f"{base}.hydration", f"{base}.drafting",
                                  f"{base}.evals"]


MODEL_BOUND = {"agent", "hydration", "evals", "drafting"}
BACKGROUND = {"hydration", "evals", "drafting"}


def test_the_procfile_runs_a_worker_per_queue_with_small_concurrency_and_beat():
    """The model-bound queues run the threads pool (their threads mostly wait on the model, issue 31);
    the others are small prefork workers."""
    lines = dict(line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line.strip())
    consumed = {}
    for name, command in lines.items():
        if " worker" in command:
            queues = re.search(r"-Q (\S+)", command).group(1)
            kind = queues.rpartition(".")[2] if "}." in queues else ""
            if kind in MODEL_BOUND:
                assert "--pool=threads" in command, name
                # Their threads share a psycopg pool: connections bounded per process (README, "Throughput per worker").
                assert "env DB_POOL_MAX_SIZE=${DB_POOL_MAX_SIZE:-20} celery " in command, name
                assert "--concurrency" not in command, name  # LINDY_WORKER_THREADS (settings) decides
            else:
                concurrency = int(re.search(r"--concurrency=(\d+)", command).group(1))
                assert concurrency <= 2, name  # make run shares two cores between all of them
            # Background work yields the CPU to what a person waits on (the debounce, the agent's
            # answer, pages): its 50 threads would otherwise starve the channels worker (issue 31).
            assert command.strip().startswith("nice -n 10 ") == (kind in BACKGROUND), name
            assert re.search(r"-n \S+@%h", command), f"{name}: each worker needs its own node name"
            consumed[name] = queues
    assert sorted(consumed.values()) == sorted(
        ["${CELERY_QUEUE:-lindy}"] + [f"${{CELERY_QUEUE:-lindy}}.{kind}" for kind in settings.LINDY_QUEUE_CLASSES])
    assert "beat" in lines and "celery -A lindy beat" in lines["beat"]


@pytest.mark.django_db
def test_a_task_sent_by_name_lands_in_its_queue_on_the_broker():
    """Through the real broker: the message is in the class's queue and nowhere else."""
    if not settings.REDIS_URL:
        pytest.skip("needs Redis: set REDIS_URL or run a server on 127.0.0.1:6379")
    with current_app.connection_for_write() as conn:
        for name in queue.all_queues():
            conn.default_channel.queue_purge(name)
        try:
            queue.enqueue("router.tasks.eval_run", 0)
            queue.enqueue("channels_app.tasks.debounce_fire", 0, f"v-{uuid.uuid4().hex}")
            client = conn.default_channel.client
            sizes = {name: client.llen(name) for name in queue.all_queues()}
        finally:
            for name in queue.all_queues():
                conn.default_channel.queue_purge(name)
    base = settings.CELERY_TASK_DEFAULT_QUEUE
    assert sizes == {base: 0, f"{base}.channels": 1, f"{base}.agent": 0, f"{base}.hydration": 0,
                     f"{base}.drafting": 0, f"{base}.evals": 1}
