"""The leased job, once (lindy.jobs): every background job keeps its lease in the same fields,
is claimed and recovered by the same code, and each kind's recovery sweep stops at its attempt
cap and never queues the same run twice. Every task's time limit stays below the broker's
visibility timeout."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from celery.app.task import Task
from django.apps import apps
from django.conf import settings
from django.utils import timezone

from lindy import jobs
from lindy.celery import app

ROOT = Path(__file__).resolve().parents[2]
JOB_MODELS = ["hydration.Run", "router.OptimizationRun", "drafting.ContextInit", "drafting.Draft",
              "drafting.LearnerRun", "channels_app.InboundBundle"]
# The lease's field names, and the names the claims had before they were made one.
LEASE_NAMES = (*jobs.LEASE_FIELDS, "claimed_by", "claimed_at")


def test_every_job_model_is_a_leased_job_with_the_sweep_index():
    leased = {m._meta.label for m in jobs.leased_models(apps.get_models())}
    assert leased == set(JOB_MODELS)
    base = {name: jobs.LeasedJob._meta.get_field(name).deconstruct()[1:] for name in jobs.LEASE_FIELDS}
    for label in JOB_MODELS:
        model = apps.get_model(label)
        for name in jobs.LEASE_FIELDS:  # inherited as declared, never redeclared
            assert model._meta.get_field(name).deconstruct()[1:] == base[name], (label, name)
        assert [model.STATUS_FIELD, "heartbeat_at"] in [index.fields for index in model._meta.indexes], label


def test_no_model_outside_lindy_jobs_declares_a_lease_field():
    # `attempts` is also a plain retry count of rows that are no leased job (a Slack event); a job's
    # own is checked above to be the inherited one.
    names = set(LEASE_NAMES) - {"attempts"}
    declared = re.compile(rf"^\s+({'|'.join(sorted(names))})\s*=\s*models\.", re.M)
    found = []
    for config in apps.get_app_configs():
        folder = Path(config.path)
        if not folder.is_relative_to(ROOT):
            continue
        for path in folder.rglob("*.py"):
            if "migrations" in path.parts or path == ROOT / "lindy" / "jobs.py":
                continue
            found += [f"{path.relative_to(ROOT)}: {m.group(1)}" for m in declared.finditer(path.read_text())]
    assert found == []
    for model in apps.get_models():
        if not issubclass(model, jobs.LeasedJob):
            assert not {f.name for f in model._meta.local_fields} & names, model._meta.label


def test_every_task_time_limit_is_below_the_visibility_timeout():
    app.loader.import_default_modules()
    visibility = app.conf.broker_transport_options["visibility_timeout"]
    assert visibility == settings.CELERY_VISIBILITY_TIMEOUT
    checked = []
    for name, task in app.tasks.items():
        if name.startswith("celery."):
            continue
        hard = task.time_limit or app.conf.task_time_limit
        soft = task.soft_time_limit or app.conf.task_soft_time_limit
        assert hard and hard < visibility, (name, hard)
        assert soft is None or soft < hard, (name, soft, hard)
        checked.append(name)
    assert {"router.tasks.eval_run", "router.tasks.optimization_run", "hydration.tasks.hydrate",
            "drafting.tasks.learner_run", "channels_app.tasks.bundle_dispatch"} <= set(checked)


# --- each kind's recovery: once per run, never past its cap -------------------------------------

@dataclass
class Kind:
    name: str
    make: Callable  # (cast, attempts, quiet_for) -> a job whose holder went quiet `quiet_for` seconds ago
    recover: Callable[[], object]
    cap: Callable[[], int]
    stale: Callable[[], float]
    task: str
    given_up: Callable  # (job) -> whether it was given up


def _old(seconds: float):
    return timezone.now() - timedelta(seconds=seconds)


def _hydration(cast, attempts, quiet_for):
    from hydration import services
    from hydration.models import Run
    from memory import services as memory_services

    run, _ = services.run_trigger(filesystem=memory_services.filesystem_for_user(cast.member), trigger="manual",
                                  enqueue=False)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, attempts=attempts, started_at=_old(quiet_for),
                                         lease_until=timezone.now() + timedelta(minutes=30), lease_task_id="dead",
                                         heartbeat_at=_old(quiet_for))
    return run


def _optimization(cast, attempts, quiet_for):
    from router import services
    from router.models import OptimizationRun, Target
    from tests.router.helpers import route

    run = services.optimization_run_create(route=route("validator"), target=Target.objects.get(name="offline-rules"),
                                           budget_usd="1", budget_calls=500)
    OptimizationRun.objects.filter(pk=run.pk).update(status=OptimizationRun.Status.RUNNING, attempts=attempts,
                                                     lease_task_id="dead", heartbeat_at=_old(quiet_for))
    return run


def _context_init(cast, attempts, quiet_for):
    from drafting.models import ContextInit

    return ContextInit.objects.create(user=cast.member, team=cast.team, status=ContextInit.Status.COMPOSING,
                                      attempts=attempts, lease_task_id="dead", heartbeat_at=_old(quiet_for))


def _draft(cast, attempts, quiet_for):
    from drafting.models import Draft
    from hydration.models import Item
    from memory import services as memory_services

    item = Item.objects.create(filesystem=memory_services.filesystem_for_user(cast.member), source="gmail",
                               external_id="m-1", text="Can you confirm Friday?", occurred_at=timezone.now())
    return Draft.objects.create(user=cast.member, team=cast.team, item=item, gmail_message_id="m-1",
                                attempts=attempts, lease_task_id="dead", heartbeat_at=_old(quiet_for))


def _learner_run(cast, attempts, quiet_for):
    from drafting.models import LearnerRun

    return LearnerRun.objects.create(user=cast.member, team=cast.team, trigger=LearnerRun.Trigger.CADENCE,
                                     started_at=_old(quiet_for), attempts=attempts, lease_task_id="dead",
                                     heartbeat_at=_old(quiet_for))


def _bundle(cast, attempts, quiet_for):
    from channels_app.models import Conversation, InboundBundle
    from tests.channels_app.factories import SendingNumberFactory, TextingProfileFactory

    profile = TextingProfileFactory(user=cast.member, number=SendingNumberFactory())
    conversation = Conversation.objects.create(profile=profile)
    return InboundBundle.objects.create(conversation=conversation, status=InboundBundle.Status.DISPATCHING,
                                        attempts=attempts, lease_task_id="dead", heartbeat_at=_old(quiet_for),
                                        handed_over_at=_old(quiet_for), task_event_mark=10**9)


def _status(job) -> str:
    job.refresh_from_db()
    return getattr(job, job.STATUS_FIELD)


def _kinds() -> list[Kind]:
    from channels_app.services import dispatch
    from drafting.learner import initialization as learner_init
    from drafting.learner import services as learner
    from drafting.services import inbound
    from hydration import services as hydration
    from router.services import optimize

    return [
        Kind("hydration run", _hydration, hydration.runs_recover, lambda: settings.HYDRATION_RUN_MAX_ATTEMPTS,
             lambda: settings.HYDRATION_HEARTBEAT_STALE_SECONDS, "hydration.tasks.hydrate",
             lambda job: _status(job) == "interrupted"),
        Kind("optimization run", _optimization, optimize.optimization_recover,
             lambda: settings.ROUTER_OPTIMIZE_MAX_ATTEMPTS, lambda: settings.ROUTER_OPTIMIZE_STALE_SECONDS,
             "router.tasks.optimization_run", lambda job: _status(job) == "failed"),
        Kind("context initialization", _context_init, learner_init.context_inits_recover,
             lambda: learner_init.INIT_MAX_ATTEMPTS, lambda: learner_init.CLAIM_LEASE.total_seconds(),
             "drafting.tasks.learner_init_compose", lambda job: _status(job) == "failed"),
        Kind("draft", _draft, inbound.drafts_recover, lambda: inbound.MAX_ATTEMPTS, lambda: inbound.CLAIM_SECONDS,
             "drafting.tasks.item_process", lambda job: _status(job) == "failed"),
        Kind("learner run", _learner_run, learner.learner_runs_recover, lambda: learner.RUN_MAX_ATTEMPTS,
             lambda: learner.RUN_LEASE.total_seconds(), "drafting.tasks.learner_run",
             lambda job: _status(job) == "failed"),
        Kind("inbound bundle", _bundle, dispatch.debounce_recover, lambda: dispatch.MAX_DISPATCH_ATTEMPTS,
             dispatch.dispatch_lease_seconds, "channels_app.tasks.bundle_dispatch",
             lambda job: _status(job) == "failed"),
    ]


KIND_NAMES = ["hydration run", "optimization run", "context initialization", "draft", "learner run",
              "inbound bundle"]


@pytest.fixture
def sent(monkeypatch):
    """What the sweeps queue, recorded instead of sent (every path ends in a task's apply_async)."""
    queued: list[tuple[str, tuple]] = []

    def record(self, args=None, kwargs=None, **options):
        queued.append((self.name, tuple(args or ())))

    monkeypatch.setattr(Task, "apply_async", record)
    return queued


def _kind(name: str) -> Kind:
    return next(k for k in _kinds() if k.name == name)


def _sweep(kind: Kind, sent) -> list:
    before = len(sent)
    kind.recover()
    return [args for task, args in sent[before:] if task == kind.task]


@pytest.mark.django_db
@pytest.mark.parametrize("name", KIND_NAMES)
def test_a_dead_job_is_queued_again_once_and_not_by_the_next_sweep(name, cast, sent):
    kind = _kind(name)
    job = kind.make(cast, 1, kind.stale() + 5)
    first = _sweep(kind, sent)
    assert len(first) == 1, first
    job.refresh_from_db()
    assert job.requeued_at is not None and not kind.given_up(job)
    assert _sweep(kind, sent) == []  # the next tick: queued already, not queued twice


@pytest.mark.django_db
@pytest.mark.parametrize("name", KIND_NAMES)
def test_recovery_stops_at_the_attempt_cap(name, cast, sent):
    kind = _kind(name)
    job = kind.make(cast, kind.cap(), kind.stale() + 5)
    assert _sweep(kind, sent) == []
    assert kind.given_up(job)
    assert _sweep(kind, sent) == []


@pytest.mark.django_db
@pytest.mark.parametrize("name", KIND_NAMES)
def test_a_live_holder_is_left_alone(name, cast, sent):
    kind = _kind(name)
    job = kind.make(cast, 1, 0)
    assert _sweep(kind, sent) == []
    job.refresh_from_db()
    assert job.requeued_at is None and not kind.given_up(job)


# --- claim and the budget wait ----------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_of_deliveries_racing_for_one_job_exactly_one_claims_it(cast):
    """The claim is one conditional UPDATE: whatever the interleaving, one delivery wins."""
    import threading

    from django.db import connection
    from django.db.models import Q

    from drafting.models import ContextInit

    init = ContextInit.objects.create(user=cast.member, team=cast.team)
    start, won = threading.Barrier(4), []

    def deliver(n: int) -> None:
        try:
            start.wait()
            taken = jobs.claim(ContextInit.objects.all(), init.pk, task_id=f"delivery-{n}",
                               waiting=Q(lease_task_id=""), running=~Q(lease_task_id=""), stale_seconds=60)
            if taken is not None:
                won.append(taken.lease_task_id)
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    init.refresh_from_db()
    assert len(won) == 1 and init.lease_task_id == won[0] and init.attempts == 1
    assert init.lease_holder == jobs.holder() and init.heartbeat_at is not None


BUDGET_TASKS = [
    ("hydration.tasks.hydrate", "hydration.services", "run_execute"),
    ("router.tasks.eval_run", "router.services", "eval_run_execute"),
    ("router.tasks.optimization_run", "router.services", "optimization_run_execute"),
    ("drafting.tasks.item_process", "drafting.services", "item_process"),
    ("drafting.tasks.learner_run", "drafting.learner.services", "learner_run"),
    ("drafting.tasks.learner_init_compose", "drafting.learner.initialization", "context_init_compose"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("task_name", "module", "function"), BUDGET_TASKS)
def test_every_model_calling_task_waits_for_budget_through_the_one_base_task(task_name, module, function, cast,
                                                                          monkeypatch):
    import importlib

    from celery.exceptions import Retry

    from router.budgets import BudgetExhausted

    def out_of_budget(**kwargs):
        raise BudgetExhausted("anthropic has no room", retry_after=7)

    monkeypatch.setattr(importlib.import_module(module), function, out_of_budget)
    task = app.tasks[task_name]
    assert isinstance(task, jobs.BudgetTask)
    queued = []
    monkeypatch.setattr(Task, "apply_async", lambda self, args=None, kwargs=None, **opts: queued.append(opts))
    task.push_request(id="delivery-1", retries=0, is_eager=False, called_directly=False,
                      args=[cast.member.pk], kwargs={})
    try:
        with pytest.raises(Retry):
            task.run(cast.member.pk)
    finally:
        task.pop_request()
    assert [opts.get("countdown") for opts in queued] == [7]


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_beats_only_while_held_and_never_from_inside_the_callers_transaction(cast):
    from django.db import transaction
    from django.db.models import Q

    from drafting.models import ContextInit
    from lindy import heartbeat
    from tests.waiting import wait_until

    init = ContextInit.objects.create(user=cast.member, team=cast.team)
    taken = jobs.claim(ContextInit.objects.all(), init.pk, task_id="delivery-1", waiting=Q(lease_task_id=""),
                       running=~Q(lease_task_id=""), stale_seconds=60)
    where, written = jobs.held(taken), []
    with heartbeat.Beating(0.05, lambda: written.append(jobs.beat(taken, where=where))) as beating:
        assert beating.running
        wait_until(lambda: 1 in written, what="a beat")
        assert ContextInit.objects.get(pk=init.pk).heartbeat_at > taken.heartbeat_at
        # Taken over by another delivery: this one's beats write nothing any more.
        ContextInit.objects.filter(pk=init.pk).update(lease_task_id="delivery-2", heartbeat_at=None)
        seen = len(written)
        wait_until(lambda: len(written) >= seen + 2, what="two more beats")
    assert written[-1] == 0 and ContextInit.objects.get(pk=init.pk).heartbeat_at is None
    # Inside the caller's transaction the row may be uncommitted: no thread (its own connection
    # would not see it, or would wait on the caller's lock); the job's own writes are its beats.
    with transaction.atomic(), jobs.beating(taken, interval=0.05) as beating:
        assert not beating.running
