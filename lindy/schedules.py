"""Beat entries the product needs, created by code.

Apps register their periodic tasks here (in AppConfig.ready); `sync()` writes them to
django-celery-beat's tables, idempotently. It runs after every `migrate` and from
`manage.py sync_schedules`. Entries stay editable in the admin: a sync creates missing
entries and never overwrites an interval someone changed by hand (one still at a previous
default, `previous_every`, was not: it moves to the new default).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Periodic:
    name: str
    task: str
    every_seconds: int
    kwargs: dict = field(default_factory=dict)
    description: str = ""
    # Intervals this entry had by default before: an existing entry still at one of them was never
    # changed by hand, so sync moves it to every_seconds (a default made faster reaches deployments).
    previous_every: tuple[int, ...] = ()


_REGISTRY: dict[str, Periodic] = {}


def register(entry: Periodic) -> None:
    _REGISTRY[entry.name] = entry


def registered() -> list[Periodic]:
    return sorted(_REGISTRY.values(), key=lambda e: e.name)


def sync() -> list[str]:
    """Create the beat entries that do not exist yet, and move an entry still at a previous default
    interval to its current one. Returns the names created."""
    import json

    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    created = []
    for entry in registered():
        existing = PeriodicTask.objects.select_related("interval").filter(name=entry.name).first()
        if existing is not None:
            interval = existing.interval
            if (interval is not None and interval.period == IntervalSchedule.SECONDS
                    and interval.every in entry.previous_every):
                existing.interval, _ = IntervalSchedule.objects.get_or_create(
                    every=entry.every_seconds, period=IntervalSchedule.SECONDS)
                existing.save(update_fields=["interval"])
            continue
        interval, _ = IntervalSchedule.objects.get_or_create(
            every=entry.every_seconds, period=IntervalSchedule.SECONDS
        )
        PeriodicTask.objects.create(
            name=entry.name,
            task=entry.task,
            interval=interval,
            kwargs=json.dumps(entry.kwargs),
            description=entry.description,
        )
        created.append(entry.name)
    return created


def sync_on_migrate(sender, **kwargs):
    sync()


register(
    Periodic(
        name="lindy.heartbeat",
        task="lindy.tasks.heartbeat",
        every_seconds=60,
        description="Proves beat and a worker are alive; /healthz reports the last beat.",
    )
)
