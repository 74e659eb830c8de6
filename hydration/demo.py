"""Demo: one offline hydration of user@acme.test's memory and of team Acme's. Idempotent:
once a file system has a run, it is left alone."""

from __future__ import annotations

from memory import services as memory_services

from . import services
from .models import Run


def seed(ctx) -> None:
    targets = [memory_services.filesystem_for_user(ctx.users["user@acme.test"]),
               memory_services.filesystem_for_team(ctx.teams["Acme"])]
    for fs in targets:
        if Run.objects.filter(filesystem=fs).exists():
            continue
        services.run_now_sync(filesystem=fs, trigger=Run.Trigger.DEMO)
