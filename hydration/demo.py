"""Demo: one offline hydration of user@acme.test's memory and of team Acme's. Idempotent:
once a file system has a run, it is left alone."""

from __future__ import annotations

from lindy.demo import require
from memory import services as memory_services

from . import services
from .models import Run


def seed(ctx) -> None:
    targets = [memory_services.filesystem_for_user(ctx.users["user@acme.test"]),
               memory_services.filesystem_for_team(ctx.teams["Acme"])]
    for fs in targets:
        if Run.objects.filter(filesystem=fs).exists():
            continue
        run = services.run_now_sync(filesystem=fs, trigger=Run.Trigger.DEMO)
        require("hydration", run.status in (Run.Status.SUCCEEDED, Run.Status.NO_CHANGES),
                f"the run of {fs} ended {run.get_status_display()!r}: {run.error or run.stage}")
