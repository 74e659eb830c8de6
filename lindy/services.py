"""Every write of the core domain."""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.apps import apps as django_apps
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from . import audit, erasure
from .models import AgentTask, ApiToken, Meeting, Membership, TaskEvent, Team, User

HEARTBEAT_KEY = "lindy:heartbeat"


def membership_set(*, team: Team, user: User, role: str = Membership.Role.MEMBER, actor=None) -> Membership:
    """Put `user` in `team` with `role` (audited when it changes anything). `actor` is who did it,
    None for the system (the demo, a setup script)."""
    with transaction.atomic():
        before = Membership.objects.select_for_update().filter(team=team, user=user).values_list("role", flat=True).first()
        membership, _ = Membership.objects.update_or_create(team=team, user=user, defaults={"role": role})
        if before != role:
            audit.record(actor=actor, action="membership.role_set" if before else "membership.added", obj=membership,
                         team=team, before={"user": user.email, "role": before} if before else None,
                         after={"user": user.email, "role": role})
    return membership


DISPLAY_NAME_MAX = 150


def user_display_name_set(*, user: User, name: str) -> User:
    """The name the product shows for `user` instead of their email (blank: the email's local part).
    Raises ValueError, changing nothing, on a name too long or with control characters."""
    name = " ".join(name.split())
    if len(name) > DISPLAY_NAME_MAX:
        raise ValueError(f"A display name has at most {DISPLAY_NAME_MAX} characters.")
    if any(ord(ch) < 32 for ch in name):
        raise ValueError("A display name cannot contain control characters.")
    if name != user.name:
        before = user.name
        user.name = name
        user.save(update_fields=["name"])
        audit.record(actor=user, action="user.display_name_set", obj=user, before={"name": before}, after={"name": name})
    return user


def api_token_create(*, user: User, name: str = "") -> tuple[ApiToken, str]:
    """Returns the token row and the clear-text key, which is never stored."""
    key = settings.API_TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name, prefix=key[: len(settings.API_TOKEN_PREFIX) + 6], key_hash=ApiToken.hash_key(key)
    )
    return token, key


def api_token_authenticate(*, key: str) -> User | None:
    token = (
        ApiToken.objects.select_related("user")
        .filter(key_hash=ApiToken.hash_key(key), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    # Touch at most once a minute: a busy client should not write on every request.
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user


def task_create(
    *, team: Team, owner: User, title: str, visibility: str = AgentTask.Visibility.PRIVATE,
    created_at: datetime | None = None,
) -> AgentTask:
    return AgentTask.objects.create(
        team=team, owner=owner, title=title, visibility=visibility, created_at=created_at or timezone.now()
    )


def task_event_add(
    *, task: AgentTask, actor: str, content: str = "", name: str = "", tool_name: str = "",
    tool_arguments: dict | None = None, created_at: datetime | None = None, model_call_id: int | None = None,
) -> TaskEvent:
    """Append an event; the sequence number is taken under a row lock so concurrent writers
    never share one. `model_call_id`: the model call that wrote it (the agent loop's events)."""
    with transaction.atomic():
        # Stamping the task locks its row (as SELECT ... FOR UPDATE would) in the same statement:
        # the next writer waits here, then reads the sequence with this event in it.
        now = timezone.now()
        if not AgentTask.objects.filter(pk=task.pk).update(updated_at=now):
            raise AgentTask.DoesNotExist(f"AgentTask {task.pk} does not exist.")
        last = TaskEvent.objects.filter(task_id=task.pk).aggregate(last=Max("seq"))["last"] or 0
        event = TaskEvent.objects.create(
            task_id=task.pk, seq=last + 1, actor=actor, name=name, content=content,
            tool_name=tool_name, tool_arguments=tool_arguments, created_at=created_at or now,
            model_call_id=model_call_id,
        )
    return event


def meeting_create(
    *, team: Team, owner: User, title: str, notes: str, occurred_at: datetime,
    shared_with: list[User] | None = None, public: bool = False,
) -> Meeting:
    with transaction.atomic():
        meeting = Meeting.objects.create(
            team=team, owner=owner, title=title, notes=notes, occurred_at=occurred_at, public=public
        )
        if shared_with:
            meeting.shared_with.set(shared_with)
    return meeting


def heartbeat_record() -> datetime:
    now = timezone.now()
    cache.set(HEARTBEAT_KEY, now.isoformat(), timeout=None)
    return now


def ping_record(*, token: str) -> None:
    cache.set(f"lindy:ping:{token}", timezone.now().isoformat(), timeout=600)


@dataclass(frozen=True)
class Removed:
    """What deleting a user removed (or would remove): rows per kind, from Django's own counts."""

    email: str
    counts: dict[str, int]  # "app.Model" -> rows

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def lines(self) -> list[tuple[str, int]]:
        """(human name, rows), largest first: e.g. ("memory files", 12)."""
        named = Counter[str]()
        for label, count in self.counts.items():
            try:
                name = str(django_apps.get_model(label)._meta.verbose_name_plural)
            except LookupError:
                name = label
            named[name] += count
        return sorted(named.items(), key=lambda pair: (-pair[1], pair[0]))

    def summary(self) -> str:
        parts = ", ".join(f"{count} {name}" for name, count in self.lines())
        return f"Deleted {self.email} and {self.total} rows of their data: {parts}."


def superuser_rank_refusal(*, actor: User, removing: Sequence[User] = (), demoting: Sequence[User] = ()) -> str:
    """Why `actor` may not delete `removing` or take superuser rank from `demoting`, or "".

    Only a superuser removes or demotes a superuser (a staff account with the delete permission on
    users once deleted the only one), and the last active superuser stays: without one nobody can
    reach the Models pages or grant the rank again."""
    touched = {u.pk: u for u in [*removing, *demoting] if u.is_superuser}
    if not touched:
        return ""
    if not actor.is_superuser:
        names = ", ".join(sorted(u.email for u in touched.values()))
        return f"Only a superuser can delete or demote a superuser ({names})."
    if not User.objects.filter(is_superuser=True, is_active=True).exclude(pk__in=list(touched)).exists():
        return "That would leave no active superuser: make another superuser first."
    return ""


def user_delete(*, user: User, dry_run: bool = False, actor=None) -> Removed:
    """Delete `user` with their memory, items, messages, conversations and tokens (lindy.erasure),
    and say what was removed (in the audit log, with `actor`). `dry_run` deletes inside a
    transaction that is rolled back: the counts are exactly what a real run would remove, and
    nothing changes."""
    email = user.email
    with transaction.atomic():
        if not dry_run:
            roles = dict(Membership.objects.filter(user=user).values_list("team__name", "role"))
            audit.record(actor=actor, action="user.deleted", obj=user, label=email,
                         before={"email": email, "teams": roles, "is_staff": user.is_staff,
                                 "is_support": user.is_support, "is_superuser": user.is_superuser},
                         after=None)
        total = Counter[str]()
        for eraser in erasure.erasers():
            erasure.merge(total, eraser(user))
        _, counts = User.objects.filter(pk=user.pk).delete()
        erasure.merge(total, counts)
        if dry_run:
            transaction.set_rollback(True)
    return Removed(email=email, counts=dict(total))
