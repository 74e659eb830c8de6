"""Run the context learner for one user now, in this process, and print the outcome.

    python manage.py run_learner --user user@acme.test
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from drafting.learner import services
from drafting.models import LearnerRun
from lindy.models import User


class Command(BaseCommand):
    help = "Run the context learner for one user now and print the outcome (proposal, votes, sign test)."

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="The user's email address.")

    def handle(self, *args, **options):
        user = User.objects.filter(email__iexact=options["user"].strip()).first()
        if user is None:
            raise CommandError(f"No user {options['user']!r}.")
        try:
            run = services.learner_run(user=user, trigger=LearnerRun.Trigger.COMMAND)
        except services.LearnerError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Learner run {run.pk} for {user.email}: {run.get_outcome_display()}")
        self.stdout.write(f"  meaningful pairs not yet learned from: {run.new_pairs}")
        for proposal in run.proposals.all():
            self.stdout.write(f"  proposal {proposal.pk} ({proposal.get_status_display()}): {proposal.summary}")
            self.stdout.write(f"    {proposal.wins} wins, {proposal.losses} losses, {proposal.ties} ties"
                              + (f", p = {proposal.p_value:.3f}" if proposal.p_value is not None else ""))
            if proposal.diff:
                self.stdout.write("    " + proposal.diff.replace("\n", "\n    ").rstrip())
        if run.message:
            self.stdout.write(f"  {run.message}")
