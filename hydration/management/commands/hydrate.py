"""Run one hydration synchronously and print its summary.

    python manage.py hydrate --user user@acme.test
    python manage.py hydrate --team Acme
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from hydration import services
from hydration.models import Run
from lindy.models import Team, User
from memory import services as memory_services


def summary_lines(run: Run) -> list[str]:
    lines = [f"Run {run.pk} for {run.filesystem.label}: {run.get_status_display()}"]
    for kind, result in (run.sources or {}).items():
        detail = result.get("error") or result.get("detail") or ""
        lines.append(f"  {kind:<9} {result.get('status', '?'):<14} {result.get('items', 0)} new item(s)"
                     + (f"  ({detail})" if detail else ""))
    lines.append(f"Items summarized: {run.item_count}; facts: {run.fact_count}; verifier rejections: {run.verifier_rounds}")
    lines.append(f"Revision: r{run.revision_id}" if run.revision_id else "Revision: none")
    if run.violations:
        lines.append("Violations:")
        lines += [f"  - {v['path']} ({v['kind']}): {v['detail']}" for v in run.violations]
    else:
        lines.append("Violations: none")
    lines.append(f"Model calls: {run.model_calls}; tokens: {run.tokens} ({run.input_tokens} in, {run.output_tokens} out); "
                 f"cost: ${run.cost:.4f}")
    if run.error:
        lines.append(f"Error: {run.error}")
    return lines


class Command(BaseCommand):
    help = "Hydrate one user's or one team's memory now, in this process, and print the run's summary."

    def add_arguments(self, parser):
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--user", metavar="EMAIL")
        group.add_argument("--team", metavar="NAME")

    def handle(self, *args, **options):
        if options["user"]:
            user = User.objects.filter(email__iexact=options["user"]).first()
            if user is None:
                raise CommandError(f"No user with email {options['user']}.")
            fs = memory_services.filesystem_for_user(user)
        else:
            team = Team.objects.filter(name=options["team"]).first()
            if team is None:
                raise CommandError(f"No team named {options['team']}.")
            fs = memory_services.filesystem_for_team(team)
        run = services.run_now_sync(filesystem=fs, trigger=Run.Trigger.COMMAND)
        if run.is_active:
            raise CommandError(f"Run {run.pk} is already in progress for {fs.label}; not starting another.")
        self.stdout.write("\n".join(summary_lines(run)))
        if run.status == Run.Status.FAILED:
            raise CommandError("The run failed.")
