"""Who may see and do what: the role primitives and the core's own rules (tasks, meetings).

Each app keeps the rules about its own objects in `<app>/permissions.py`, built from these
primitives; every view and API endpoint asks its app's module. Roles: a team `member` or `admin` (Membership.role), support staff (User.is_support:
channel health across teams, never memory, message bodies or actions, even when they are in a team:
`can_use_workspace`) and Django
superusers (manage models and routing, use the admin). Another team's objects are
not "forbidden" but absent: lookups go through the visible_* querysets, so they 404.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.http import Http404

from .models import AgentTask, Meeting, Membership, Team

ADMIN = Membership.Role.ADMIN
MEMBER = Membership.Role.MEMBER


def memberships(user) -> list[Membership]:
    """The user's memberships with their teams, by team name: one query, memoised on the user
    object for the request (every permission rule and the home page's "who you are" read it)."""
    if not getattr(user, "is_authenticated", False):
        return []
    cached = getattr(user, "_lindy_memberships", None)
    if cached is None:
        cached = list(Membership.objects.filter(user=user).select_related("team").order_by("team__name", "pk"))
        user._lindy_memberships = cached
    return cached


def _roles(user) -> dict[int, str]:
    """team id -> role, from the memoised memberships."""
    return {m.team_id: m.role for m in memberships(user)}


def team_role(user, team: Team | int) -> str | None:
    team_id = team if isinstance(team, int) else team.pk
    return _roles(user).get(team_id)


def team_ids(user) -> list[int]:
    return list(_roles(user))


def admin_team_ids(user) -> list[int]:
    return [team_id for team_id, role in _roles(user).items() if role == ADMIN]


def is_member(user, team: Team | int) -> bool:
    return team_role(user, team) is not None


def is_team_admin(user, team: Team | int) -> bool:
    return team_role(user, team) == ADMIN


def is_support(user) -> bool:
    return bool(getattr(user, "is_authenticated", False) and user.is_support)


def is_superuser(user) -> bool:
    return bool(getattr(user, "is_authenticated", False) and user.is_superuser)


# Sections of the product, as the navigation shows them.

def can_use_workspace(user) -> bool:
    """Memory, tasks, meetings, blocked actions, the outbox, texting the assistant: anyone who
    belongs to a team, except support staff. This is the one rule behind every read of a body
    (task events, meeting notes, memory, messages): support staff never read bodies, whatever
    teams they are in, so a membership given to a support account opens none of them."""
    return bool(_roles(user)) and not is_support(user)


def workspace_team_ids(user) -> list[int]:
    """The teams whose contents (bodies) the user may read: their teams, through can_use_workspace.
    Every rule that shows a task, message, memory, draft or action body by team asks this (or the
    admin variant below), never team_ids / admin_team_ids, so a support account's memberships
    open nothing."""
    return team_ids(user) if can_use_workspace(user) else []


def workspace_admin_team_ids(user) -> list[int]:
    """The teams whose contents the user oversees as their admin (members' proposals, eval
    candidates, task scores, channels feeding memory), through the same rule. admin_team_ids stays
    for what shows numbers only (usage, costs, decision counts)."""
    return admin_team_ids(user) if can_use_workspace(user) else []


def is_content_staff(user) -> bool:
    """Django staff who review every team's contents (eval candidates, the analyst's pages);
    a support account with the staff flag is still support: it reads no bodies."""
    return bool(getattr(user, "is_authenticated", False) and (user.is_staff or user.is_superuser)
                and not is_support(user))


def can_view_audit(user) -> bool:
    """The audit log: superusers read all of it, team admins their teams' entries; support staff
    (even a team's admin) and members none."""
    return is_superuser(user) or bool(workspace_admin_team_ids(user))


# Objects.

def visible_tasks(user) -> QuerySet[AgentTask]:
    """Tasks the user owns, and the public tasks of their teams."""
    if not can_use_workspace(user):
        return AgentTask.objects.none()
    return AgentTask.objects.filter(
        Q(owner=user, team_id__in=team_ids(user))
        | Q(visibility=AgentTask.Visibility.PUBLIC, team_id__in=team_ids(user))
    )


def can_write_task(user, task: AgentTask) -> bool:
    return task.owner_id == user.pk and is_member(user, task.team_id)


def visible_meetings(user) -> QuerySet[Meeting]:
    """Meetings the user owns or that were shared with them, and their teams' public library."""
    if not can_use_workspace(user):
        return Meeting.objects.none()
    teams = team_ids(user)
    return Meeting.objects.filter(
        Q(owner=user, team_id__in=teams)
        | Q(shared_with=user, team_id__in=teams)
        | Q(public=True, team_id__in=teams)
    ).distinct()


def team_for_new_object(user, team_id: int | None) -> Team:
    """The team a new task or meeting belongs to: the one asked for, if the user is in it,
    otherwise their only team. Raises Http404 for a team they are not in."""
    teams = team_ids(user) if can_use_workspace(user) else []
    if team_id is None:
        if not teams:
            raise Http404("You do not belong to any team.")
        team_id = sorted(teams)[0]
    if team_id not in teams:
        raise Http404("No such team.")
    return Team.objects.get(pk=team_id)


def get_visible_or_404(queryset: QuerySet, **lookup):
    try:
        return queryset.get(**lookup)
    except (queryset.model.DoesNotExist, ValueError, TypeError):
        raise Http404(f"No such {queryset.model._meta.verbose_name}.") from None
