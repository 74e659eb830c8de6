"""Reads of the validator, always through the permission rules."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count
from django.utils import timezone

from lindy.counting import capped_count
from lindy.models import Team

from . import daily_stats, permissions
from .models import Decision, EvalCandidate, EvalMatrix

VALIDATED = daily_stats.VALIDATED


BADGE_CAP = 99


def blocked_count(user, cap: int = BADGE_CAP + 1) -> int:
    """The user's open blocked actions, counted up to `cap`: the navigation shows this on every page,
    so it reads at most `cap` entries of the (user, status, created_at) index, however many there are."""
    if not permissions.can_review_actions(user):
        return 0
    return capped_count(Decision.objects.filter(user=user, status=Decision.Status.BLOCKED), cap)


def blocked_badge(user) -> int | str:
    """The navigation badge: the count, or "99+" beyond it."""
    count = blocked_count(user)
    return f"{BADGE_CAP}+" if count > BADGE_CAP else count


def decision_list(user, status: str | None = None):
    queryset = permissions.visible_decisions(user).select_related("task")
    if status:
        queryset = queryset.filter(status=status)
    return queryset.order_by("-created_at", "-pk")


def decision_detail(user, decision_id) -> Decision:
    return permissions.get_visible_or_404(
        permissions.visible_decisions(user).select_related("task", "team", "resolved_by"), pk=decision_id
    )


def history_around(decision: Decision, before: int = 8) -> list[dict]:
    """The task history the validator saw, up to the action (the last `before` events)."""
    task = decision.task
    if task is None:
        return [dict(item, seq=item.get("seq") or i + 1) for i, item in enumerate(decision.history)][-before:]
    events = task.events.order_by("-seq")
    if decision.event_seq is not None:
        events = events.filter(seq__lte=decision.event_seq)
    return [
        {"seq": e.seq, "actor": e.actor, "name": e.name, "content": e.content}
        for e in reversed(list(events[:before]))
    ]


def team_stats(user, *, days: int = 30) -> dict:
    """Per team the user administers: validated decisions per tool per day, blocked among them.
    Counts only — admins never see the actions themselves."""
    team_ids = permissions.admin_team_ids(user)
    first_day = timezone.localdate() - timedelta(days=days - 1)
    names = dict(Team.objects.filter(pk__in=team_ids).values_list("pk", "name"))
    # Summaries for the rolled-up days, the decisions only for the days after: O(days), not O(decisions).
    rows = daily_stats.day_rows(team_ids, first_day)
    teams: dict[str, dict] = {}
    for row in sorted(rows, key=lambda r: (names[r["team_id"]], r["tool"], r["day"])):
        team = teams.setdefault(names[row["team_id"]], {"tools": {}})
        day = row["day"].isoformat()
        tool = team["tools"].setdefault(row["tool"], {"total": 0, "blocked": 0, "failures": 0, "by_day": {}})
        tool["total"] += row["total"]
        tool["blocked"] += row["blocked"]
        tool["failures"] += row["failures"]
        tool["by_day"][day] = {"total": row["total"], "blocked": row["blocked"], "failures": row["failures"]}
    # Every day of the period is on the axis, so quiet days show as gaps, not as a squeezed scale.
    days_sorted = [(first_day + timedelta(days=offset)).isoformat() for offset in range(days)]
    result = {}
    for name, team in teams.items():
        tools = []
        for tool_name, tool in sorted(team["tools"].items()):
            tools.append({
                "tool": tool_name, "total": tool["total"], "blocked": tool["blocked"], "failures": tool["failures"],
                "block_rate": round(100 * tool["blocked"] / tool["total"], 1) if tool["total"] else 0.0,
                "series": [
                    round(100 * tool["by_day"][d]["blocked"] / tool["by_day"][d]["total"], 1)
                    if d in tool["by_day"] else None
                    for d in days_sorted
                ],
            })
        result[name] = {"days": days_sorted, "tools": tools}
    return result


def eval_matrix(matrix_id=None):
    """A matrix (the latest when no id), or None when none was run. Callers check
    permissions.can_view_eval_matrix."""
    matrices = EvalMatrix.objects.defer("cases")
    if matrix_id is None:
        return matrices.first()
    return matrices.filter(pk=matrix_id).first()


def eval_cells(matrix) -> list:
    return list(matrix.cells.select_related("target").order_by("pk")) if matrix else []


def recent_matrices(limit: int = 10) -> list:
    return list(EvalMatrix.objects.defer("cases").order_by("-created_at", "-pk")[:limit])


def candidate_counts() -> dict[str, int]:
    rows = EvalCandidate.objects.values("status").annotate(n=Count("id"))
    return {row["status"]: row["n"] for row in rows}


HOME_RECENT = 3


def home_tile(user) -> dict:
    """The home page's "blocked actions waiting for you": the count (capped like the badge) and
    the newest few. Two bounded queries."""
    count = blocked_count(user)
    recent = list(permissions.visible_decisions(user).filter(status=Decision.Status.BLOCKED)
                  .select_related("task").order_by("-created_at", "-pk")[:HOME_RECENT])
    return {"count": count, "label": f"{BADGE_CAP}+" if count > BADGE_CAP else str(count), "recent": recent}
