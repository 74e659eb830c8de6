"""manage.py run_guardrails [--dry-run]: the guardrail beat job's decision, once, printed."""

from django.core.management.base import BaseCommand

from router import budgets, services
from router.models import Rollout
from router.services import guardrails


class Command(BaseCommand):
    help = ("Run the guardrail job once (judge sampled calls, then hold, ramp, roll back or complete each running "
            "rollout) and print each decision with its reasons.")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true",
                            help="Print what the job would decide, and change nothing (no judge calls either).")

    def handle(self, *args, dry_run, **options):
        if dry_run:
            running = Rollout.objects.filter(status=Rollout.Status.RUNNING).select_related("route", "candidate")
            decisions = {rollout.pk: guardrails.evaluate(rollout) for rollout in running}
        else:
            with budgets.background():  # as the beat task runs it
                decisions = services.guardrails_check_all()
        if not decisions:
            self.stdout.write("No running rollouts.")
            return
        rollouts = Rollout.objects.select_related("route", "candidate").in_bulk(list(decisions))
        for pk, outcome in decisions.items():
            rollout = rollouts[pk]
            result = outcome if dry_run else rollout.last_check
            decision = result["decision"] if dry_run else outcome
            self.stdout.write(f"rollout {pk} {rollout.route.name} -> {rollout.candidate.name}:"
                              f"{rollout.candidate_variant} at {rollout.percent}% ({rollout.status}): {decision}"
                              + (" (dry run)" if dry_run else ""))
            if decision == "skipped":
                continue
            for key, label in (("problems", "harm"), ("pending", "hold"), ("notes", "ok")):
                for line in result.get(key, []):
                    self.stdout.write(f"  {label}: {line}")
            if not dry_run and decision in ("ramp", "roll_back", "complete"):
                event = rollout.events.order_by("-created_at", "-pk").first()
                if event is not None:
                    self.stdout.write(f"  event: {event.get_kind_display()} {event.from_percent}% -> "
                                      f"{event.to_percent}%: {event.reason}")
