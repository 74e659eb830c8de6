"""The validator at 100,000 decisions: two teams, eight users, a realistic mix of statuses, spread
over 60 days, inserted with bulk_create (bench/test_decisions_bench.py measures the pages on it).

The measured user (`reviewer`) is a member of both teams with a quarter of all decisions, 1,250
of them still blocked, so every count the pages make would be large if it were not capped."""

from __future__ import annotations

import itertools
import time
from datetime import timedelta

DECISIONS = 100_000
# (status, share of every 100 decisions): most actions are exempt or allowed and run; few stay blocked.
MIX = [("exempt", 30), ("allowed", 8), ("executed", 45), ("execution_failed", 2), ("blocked", 5),
       ("authorized", 3), ("dismissed", 6), ("suggestion_followed", 1)]
TOOLS = [("send_email", "third_party"), ("pay_invoice", "dangerous"), ("delete_file", "destructive"),
         ("search_docs", "none")]


def build(total: int = DECISIONS):
    """Returns (reviewer, admin, seconds): the reviewer owns every fourth decision."""
    from django.utils import timezone

    from lindy import services as lindy_services
    from lindy.models import Membership, Team, User
    from validator.models import Decision

    started = time.perf_counter()
    stamp = time.time_ns()
    teams = [Team.objects.create(name=f"Decisions bench {stamp} {n}") for n in range(2)]
    reviewer = User.objects.create_user(email=f"reviewer-{stamp}@example.test", password="bench-pw")
    admin = User.objects.create_user(email=f"admin-{stamp}@example.test", password="bench-pw")
    for team in teams:
        lindy_services.membership_set(team=team, user=reviewer, role=Membership.Role.MEMBER)
        lindy_services.membership_set(team=team, user=admin, role=Membership.Role.ADMIN)
    others = []
    for n in range(6):
        user = User.objects.create_user(email=f"member-{n}-{stamp}@example.test", password="bench-pw")
        lindy_services.membership_set(team=teams[n % 2], user=user, role=Membership.Role.MEMBER)
        others.append((user, teams[n % 2]))
    owners = itertools.cycle([(reviewer, teams[0]), *others[:3], (reviewer, teams[1]), *others[3:]])
    statuses = [status for status, share in MIX for _ in range(share)]
    now = timezone.now()
    rows = []
    for n in range(total):
        user, team = next(owners)
        tool, effect = TOOLS[n % len(TOOLS)]
        rows.append(Decision(
            team=team, user=user, tool=tool, effect=effect,
            arguments={"n": n}, status=statuses[(n * 7) % len(statuses)], approved=n % 3 != 0,
            reasoning="Bench decision.", created_at=now - timedelta(seconds=60 * 24 * 3600 * n / total),
        ))
        if len(rows) == 5000:
            Decision.objects.bulk_create(rows)
            rows = []
    Decision.objects.bulk_create(rows)
    from django.db import connection

    with connection.cursor() as cursor:
        # As autovacuum would have by now: statistics, and the visibility map index-only scans need.
        cursor.execute("VACUUM ANALYZE validator_decision")
    return reviewer, admin, time.perf_counter() - started
