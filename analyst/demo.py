"""Demo scores: the analyst scores the demo's finished agent tasks with the product's own code (the
offline rules without a model key). The scripted vendor payment is a rogue pattern: it becomes a
candidate eval case for a reviewer."""

from __future__ import annotations

from lindy.models import AgentTask

from . import services


def seed(ctx) -> None:
    for task_id in AgentTask.objects.filter(team__in=list(ctx.teams.values())).order_by("pk").values_list("pk", flat=True):
        services.task_score(task_id=task_id)
