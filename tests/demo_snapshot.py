"""The demo, seeded once per test worker.

`seed_demo` drives the product for two simulated weeks (texting through the webhooks, the agent
loop, two weeks of email through drafting and the learner): about a minute on a loaded machine.
A test that reads the demo takes the rows the real seed made, copied in bulk into its own
transaction, instead of running the whole seed again. The snapshot itself is made by the real
`lindy.demo.seed()` (with its recount checks), in a transaction that is rolled back, the first time
a test of this worker asks for it; a test that checks the seeding itself (a failure, idempotence)
still calls `demo.seed()`, which on restored rows is the cheap idempotent pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.apps import apps
from django.core.cache import cache
from django.db import models, transaction

from lindy import demo
from lindy.models import Team, User
from router import routing


@dataclass(frozen=True)
class Snapshot:
    # For each table the seed changed: every row it held after the seed, and the keys of rows the
    # seed deleted. Tables the seed did not touch (content types, permissions...) are left alone.
    rows: list[tuple[type[models.Model], list[dict], list]]


def _tables() -> list[type[models.Model]]:
    return [model for model in apps.get_models(include_auto_created=True)
            if model._meta.managed and not model._meta.proxy]


def _read(model: type[models.Model]) -> dict:
    if model._meta.parents:
        raise TypeError(f"{model.__name__}: multi-table inheritance can't be copied in bulk")
    names = [field.attname for field in model._meta.concrete_fields]
    return {row[model._meta.pk.attname]: row for row in model._base_manager.order_by().values(*names)}


def take() -> Snapshot:
    """Seed the demo for real, read what it changed, and roll the seed back."""
    with transaction.atomic():
        before = {model: _read(model) for model in _tables()}
        demo.seed()
        rows = []
        for model in _tables():
            after = _read(model)
            if after != before[model]:
                rows.append((model, list(after.values()), [pk for pk in before[model] if pk not in after]))
        transaction.set_rollback(True)
    cache.clear()
    routing.forget_local()
    return Snapshot(rows=rows)


def restore(snapshot: Snapshot) -> demo.DemoContext:
    """The snapshot's rows in this test's database (foreign keys are checked at commit, so the
    order of the tables does not matter), and the demo context `demo.seed()` would have returned."""
    stamped = [field for model, _, _ in snapshot.rows for field in model._meta.concrete_fields
               if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)]
    flags = [(field, field.auto_now, field.auto_now_add) for field in stamped]
    try:
        # bulk_create stamps auto_now fields with the time of the copy: keep the seed's own times.
        for field in stamped:
            field.auto_now = field.auto_now_add = False
        with transaction.atomic():  # one transaction, so a transactional test checks the keys once, at the end
            _copy(snapshot)
    finally:
        for field, auto_now, auto_now_add in flags:
            field.auto_now, field.auto_now_add = auto_now, auto_now_add
    cache.clear()
    routing.forget_local()
    return demo.DemoContext(teams={team.name: team for team in Team.objects.all()},
                            users={user.email: user for user in User.objects.all()})


def _copy(snapshot: Snapshot) -> None:
    for model, found, deleted in snapshot.rows:
        pk = model._meta.pk.attname
        keys = [values[pk] for values in found] + deleted
        for start in range(0, len(keys), 500):
            # Rows the seed changed are replaced whole; no cascade, the copy brings their relations.
            model._base_manager.filter(pk__in=keys[start:start + 500])._raw_delete(model._base_manager.db)
        model._base_manager.bulk_create([model(**values) for values in found], batch_size=500)
