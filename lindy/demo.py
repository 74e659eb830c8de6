"""Demo data: teams Acme and Globex, their people and meetings (the agent's demo gives the tasks).

Idempotent: running it twice changes nothing the second time. Apps add their own demo
data by registering a `seed(context)` function (register_seeder).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from . import services
from .models import Meeting, Membership, Team, User

PASSWORD = "lindy-demo"

# (email, name, flags)
PEOPLE = [
    ("admin@acme.test", "Ada Admin", {}),
    ("user@acme.test", "Umar User", {"is_internal": True}),
    ("sarah@acme.test", "Sarah Chen", {}),
    ("admin@globex.test", "Greta Globex", {}),
    ("support@lindy.test", "Sam Support", {"is_support": True}),
    ("ops@lindy.test", "Olga Ops", {"is_staff": True, "is_superuser": True, "is_internal": True}),
]
MEMBERSHIPS = [
    ("Acme", "admin@acme.test", Membership.Role.ADMIN),
    ("Acme", "user@acme.test", Membership.Role.MEMBER),
    ("Acme", "sarah@acme.test", Membership.Role.MEMBER),
    ("Globex", "admin@globex.test", Membership.Role.ADMIN),
]
LOGINS = [
    ("admin@acme.test", "team admin of Acme"),
    ("user@acme.test", "member of Acme (internal)"),
    ("admin@globex.test", "team admin of Globex"),
    ("support@lindy.test", "support staff"),
    ("ops@lindy.test", "superuser (Django admin, model routing)"),
]

# Each app registers its own `seed(context)` from its AppConfig.ready, with an order: the core
# seeds first, then the apps in ascending order (memory 10, agent 20 — its standing permissions
# live in memory —, router 30, channels 40, hydration 90: it hydrates what the others seeded; then
# agent's two weeks of history 95, on a simulated clock, left for the next scheduled hydration;
# the analyst 97-98; drafting's two weeks of email 99, last: its own fake Gmail, connected after
# the analyst's malformed one, is left disconnected like that one).
_SEEDERS: list[tuple[int, Callable[[DemoContext], None]]] = []


def register_seeder(order: int, seed_fn: Callable[[DemoContext], None]) -> None:
    if all(fn is not seed_fn for _, fn in _SEEDERS):
        _SEEDERS.append((order, seed_fn))


@dataclass
class DemoContext:
    teams: dict[str, Team] = field(default_factory=dict)
    users: dict[str, User] = field(default_factory=dict)


def _user(email: str, name: str, flags: dict) -> User:
    user = User.objects.filter(email=email).first()
    if user is None:
        user = User.objects.create_user(email=email, password=PASSWORD, name=name, **flags)
    return user


def _meetings(ctx: DemoContext) -> None:
    acme = ctx.teams["Acme"]
    user = ctx.users["user@acme.test"]
    admin = ctx.users["admin@acme.test"]
    now = timezone.now()
    meetings = [
        (admin, "Acme weekly all-hands", True, [],
         "Shipped the new onboarding flow on Tuesday. We always deploy to staging before prod. Initech is now our biggest customer; their CTO is Jane Park."),
        (user, "Initech renewal call", False, ["admin@acme.test"],
         "Jane Park (Initech CTO) wants a 2-year renewal. Priya Rao joined as Head of Legal and reviews every MSA change."),
        (admin, "Hiring sync", False, [],
         "Two backend roles open. Sarah Chen leads interviews; never schedule interviews on Fridays."),
    ]
    for index, (owner, title, public, shared, notes) in enumerate(meetings):
        if Meeting.objects.filter(team=acme, title=title).exists():
            continue
        services.meeting_create(
            team=acme, owner=owner, title=title, notes=notes, occurred_at=now - timedelta(days=3 - index, hours=2),
            shared_with=[ctx.users[e] for e in shared], public=public,
        )


class DemoFailed(Exception):
    """A step of the demo did not do what it was meant to (a run failed, an eval failed). The
    whole seed is rolled back: the demo is never served half made."""

    def __init__(self, step: str, problem: str):
        super().__init__(f"{step}: {problem}")
        self.step, self.problem = step, problem


def require(step: str, ok: bool, problem: str) -> None:
    """A seeder's check of its own outcome: raise DemoFailed naming the step when it is not met."""
    if not ok:
        raise DemoFailed(step, problem)


def _step_name(seed_fn: Callable) -> str:
    return seed_fn.__module__.removesuffix(".demo")


@transaction.atomic
def seed() -> DemoContext:
    ctx = DemoContext()
    for email, name, flags in PEOPLE:
        ctx.users[email] = _user(email, name, flags)
    for team_name in sorted({team for team, _, _ in MEMBERSHIPS}):
        ctx.teams[team_name] = Team.objects.get_or_create(name=team_name)[0]
    for team_name, email, role in MEMBERSHIPS:
        services.membership_set(team=ctx.teams[team_name], user=ctx.users[email], role=role)
    _meetings(ctx)
    for _, seed_fn in sorted(_SEEDERS, key=lambda entry: entry[0]):
        try:
            seed_fn(ctx)
        except DemoFailed:
            raise
        except Exception as exc:
            raise DemoFailed(_step_name(seed_fn), f"{type(exc).__name__}: {exc}") from exc
    return ctx
