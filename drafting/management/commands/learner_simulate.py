"""Simulate users whose work context changes, and the learner keeping their drafts up to date.

    python manage.py learner_simulate --users 3 --days 14 --seed 7

Runs the real pipeline (drafting, pairs, cadence, learner, judge) on the offline provider and a
simulated clock; prints each learner run, then ONE JSON line last:
{"days": [{"day": 1, "drafts": n, "heavy_edit_rate": r}, ...], "accepted": a, "rejected": b,
 "judge_swap_agreement": x, "judge_audit": [{"judge", "comparisons", "swap_agreement", "swap_interval",
 "length_votes", "longer_against_closeness", "longer_against_interval", "length_bias", "flags"}]}, after a
"judge audit ..." line with the same figures. Nothing is kept unless --keep."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from drafting.learner.simulation.runner import simulate


class Command(BaseCommand):
    help = "Run the drafting learner against simulated users on a simulated clock; the last line is JSON."

    def add_arguments(self, parser):
        parser.add_argument("--users", type=int, default=3)
        parser.add_argument("--days", type=int, default=14)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--mails-per-day", type=int, default=8)
        parser.add_argument("--keep", action="store_true", help="Keep the simulated team, users and records.")
        parser.add_argument("--quiet", action="store_true", help="Print only the JSON line.")

    def handle(self, *args, **options):
        if not 1 <= options["users"] <= 50:
            raise CommandError("--users must be between 1 and 50.")
        if not 1 <= options["days"] <= 60:
            raise CommandError("--days must be between 1 and 60.")
        if not 1 <= options["mails_per_day"] <= 30:
            raise CommandError("--mails-per-day must be between 1 and 30.")
        log = None if options["quiet"] else self.stdout.write
        result = simulate(users=options["users"], days=options["days"], seed=options["seed"],
                          mails_per_day=options["mails_per_day"], keep=options["keep"], log=log)
        self.stdout.write(json.dumps(result))
