"""Who may see and do what. Every view and API endpoint asks this module.

Roles: a team `member` or `admin` (Membership.role), support staff (User.is_support:
channel health across teams, never memory, message bodies or actions) and Django
superusers (manage models and routing, use the admin). Another team's objects are
not "forbidden" but absent: lookups go through the visible_* querysets, so they 404.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.http import Http404

from .models import AgentTask, Meeting, Membership, Team, User

ADMIN = Membership.Role.ADMIN
MEMBER = Membership.Role.MEMBER


def _roles(user) -> dict[int, str]:
    """team id -> role, memoised on the user object for the request."""
    if not getattr(user, "is_authenticated", False):
        return {}
    cached = getattr(user, "_lindy_roles", None)
    if cached is None:
        cached = dict(Membership.objects.filter(user=user).values_list("team_id", "role"))
        user._lindy_roles = cached
    return cached


def forget_roles(user) -> None:
    if hasattr(user, "_lindy_roles"):
        del user._lindy_roles


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
    """Memory, tasks, meetings, blocked actions: anyone who belongs to a team."""
    return bool(_roles(user))


def can_view_team_usage(user) -> bool:
    """Models: team admins see their team's usage; superusers manage routing."""
    return is_superuser(user) or bool(admin_team_ids(user))


def can_manage_models(user) -> bool:
    return is_superuser(user)


def can_view_metrics(user) -> bool:
    return is_superuser(user) or is_support(user) or bool(admin_team_ids(user))


def can_view_channel_health(user) -> bool:
    return is_superuser(user) or is_support(user)


def can_view_channels(user) -> bool:
    return can_use_workspace(user) or can_view_channel_health(user)


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
    teams = team_ids(user)
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


def users_in_teams(user) -> QuerySet[User]:
    return User.objects.filter(memberships__team_id__in=team_ids(user)).distinct()


# Router (models).

def can_choose_model_only(user) -> bool:
    """Team members who do not see the Models section still pick their own model there."""
    return can_use_workspace(user) and not can_view_team_usage(user)


def can_view_assignment(user, subject_id: int) -> bool:
    """'Why this model?' answers for the user themself and superusers."""
    return is_superuser(user) or getattr(user, "pk", None) == subject_id

# Memory (memory/): a user reads and edits their own memory and reads their teams';
# team admins edit their team's. Support staff see none of it, even if they are in a team.

def can_use_memory(user) -> bool:
    return can_use_workspace(user) and not is_support(user)


def visible_filesystems(user):
    from memory.models import FileSystem

    if not can_use_memory(user):
        return FileSystem.objects.none()
    return FileSystem.objects.filter(Q(owner=user) | Q(team_id__in=team_ids(user)))


def can_edit_filesystem(user, filesystem) -> bool:
    if not can_use_memory(user):
        return False
    if filesystem.owner_id is not None:
        return filesystem.owner_id == user.pk
    return is_team_admin(user, filesystem.team_id)

# The validator (blocked actions). Only the user an action was for sees its contents or
# resolves it: not a team admin, not support staff.

def can_review_actions(user) -> bool:
    return can_use_workspace(user)


def visible_decisions(user):
    from validator.models import Decision

    if not can_review_actions(user):
        return Decision.objects.none()
    return Decision.objects.filter(user=user, team_id__in=team_ids(user))


def visible_outbox(user):
    """What the assistant executed (or only recorded) for this user: theirs alone."""
    from validator.models import OutboxEntry

    if not can_review_actions(user):
        return OutboxEntry.objects.none()
    return OutboxEntry.objects.filter(user=user, team_id__in=team_ids(user))


def can_authorize_decision(user, decision) -> bool:
    return decision.user_id == getattr(user, "pk", None) and is_member(user, decision.team_id)


def can_view_decision_stats(user) -> bool:
    """Team admins see their teams' decision statistics (counts, never contents)."""
    return bool(admin_team_ids(user))


# Channels (channels_app).

def can_text_assistant(user) -> bool:
    """Texting onboarding (iMessage/SMS): anyone who belongs to a team."""
    return can_use_workspace(user)


# Hydration (hydration/): whoever may edit a memory may run its hydration and configure its
# sources (users their own, team admins the team's); whoever may read it sees its runs.

def can_run_hydration(user, filesystem) -> bool:
    return can_edit_filesystem(user, filesystem)


def visible_hydration_runs(user):
    from hydration.models import Run

    return Run.objects.filter(filesystem__in=visible_filesystems(user))


def can_connect_gmail(user) -> bool:
    return can_use_memory(user)
