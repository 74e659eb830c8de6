"""Reads of the validator, always through the permission rules."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, Q
from django.utils import timezone

from lindy import tool_registry
from lindy.counting import capped_count
from lindy.models import Team

from . import daily_stats, permissions
from .models import Decision, EvalCandidate, EvalCell, EvalMatrix

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
    team_ids = permissions.stats_team_ids(user)
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
                "tool": tool_name, "label": tool_registry.label(tool_name), "total": tool["total"], "blocked": tool["blocked"], "failures": tool["failures"],
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
    """The latest matrices, each with how many of its cells ran and were skipped."""
    return list(EvalMatrix.objects.defer("cases").annotate(
        cells_total=Count("cells"), cells_ran=Count("cells", filter=Q(cells__status=EvalCell.Status.DONE)),
        cells_skipped=Count("cells", filter=Q(cells__status=EvalCell.Status.SKIPPED)),
        cells_failing=Count("cells", filter=Q(cells__status=EvalCell.Status.FAILED)
                            | Q(cells__status=EvalCell.Status.DONE, cells__gate_passed=False)),
    ).order_by("-created_at", "-pk")[:limit])


def candidate_counts() -> dict[str, int]:
    rows = EvalCandidate.objects.values("status").annotate(n=Count("id"))
    return {row["status"]: row["n"] for row in rows}


HOME_RECENT = 3


def home_tile(user) -> dict:
    """The home page's "blocked actions waiting for you": the count (capped like the badge) and
    the newest few. Two bounded queries."""
    count = blocked_count(user)
    # Only what the tile shows: a decision's history and prompt are the bulk of its row.
    recent = list(permissions.visible_decisions(user).filter(status=Decision.Status.BLOCKED)
                  .select_related("task").only("pk", "tool", "arguments", "created_at", "task__title")
                  .order_by("-created_at", "-pk")[:HOME_RECENT])
    return {"count": count, "label": f"{BADGE_CAP}+" if count > BADGE_CAP else str(count), "recent": recent}
# Validator V2: cost, cache and block-rate alerts (ops) ---------------------------------------------


def validation_costs(*, days: int, now=None) -> dict:
    """Per route target and day, the validations a model answered: how many, the cache hit rate
    (cache read tokens / prompt tokens), cost per validation, and the mean share of the prompt that
    was the agent's prefix. Numbers from the decisions' own records; one grouped query."""
    from django.db.models import Avg, Q, Sum
    from django.db.models.functions import TruncDate

    now = now or timezone.now()
    since = (now - timedelta(days=days - 1)).replace(hour=0, minute=0, second=0, microsecond=0)
    rows = (
        Decision.objects.filter(created_at__gte=since, model_call_id__isnull=False)
        .annotate(day=TruncDate("created_at"))
        .values("day", "router_target__name")
        .annotate(n=Count("pk"), read=Sum("cache_read_tokens"), written=Sum("cache_write_tokens"),
                  prompt=Sum("prompt_tokens"), cost=Sum("cost"), share=Avg("prefix_share"),
                  shared=Count("pk", filter=Q(validation_mode="shared_prefix")))
        .order_by("day")
    )
    day_list = [(since + timedelta(days=i)).date() for i in range(days)]
    targets: dict[str, dict] = {}
    for row in rows:
        name = row["router_target__name"] or "(target deleted)"
        t = targets.setdefault(name, {"target": name, "validations": 0, "shared": 0, "read": 0, "written": 0,
                                      "prompt": 0, "cost": 0, "share_sum": 0.0, "share_n": 0, "by_day": {}})
        t["validations"] += row["n"]
        t["shared"] += row["shared"]
        t["read"] += row["read"] or 0
        t["written"] += row["written"] or 0
        t["prompt"] += row["prompt"] or 0
        t["cost"] += row["cost"] or 0
        if row["share"] is not None:
            t["share_sum"] += row["share"] * row["shared"]
            t["share_n"] += row["shared"]
        t["by_day"][row["day"]] = row
    out = []
    for t in targets.values():
        by_day = t.pop("by_day")
        t["hit_rate"] = round(100 * t["read"] / t["prompt"], 1) if t["prompt"] else None
        t["cost_per_validation"] = f"{t['cost'] / t['validations']:.6f}" if t["validations"] else None
        t["prefix_share"] = round(100 * t.pop("share_sum") / t["share_n"], 1) if t["share_n"] else None
        t.pop("share_n")
        t["cost"] = f"{t['cost']:.6f}"
        t["hit_series"] = [round(100 * (by_day[d]["read"] or 0) / by_day[d]["prompt"], 1)
                           if d in by_day and by_day[d]["prompt"] else None for d in day_list]
        t["cost_series"] = [float(by_day[d]["cost"] or 0) / by_day[d]["n"] if d in by_day else None for d in day_list]
        out.append(t)
    return {"days": [d.isoformat() for d in day_list], "targets": sorted(out, key=lambda t: t["target"])}


def block_rate_alerts():
    from .models import BlockRateAlert

    return BlockRateAlert.objects.order_by("-created_at", "-pk")


def alert_series(alerts, *, hours: int = 168, now=None) -> dict:
    """Hourly block rate (%) of the alerted tools and variants over the last `hours`, with each
    alert's baseline, for the chart: one query."""
    from .anomalies import HOUR, hour_floor
    from .models import BlockRateHour

    now = now or timezone.now()
    end = hour_floor(now)
    start = end - HOUR * hours
    keys = {(a.dimension, a.key): a for a in alerts}
    hour_list = [start + HOUR * i for i in range(hours)]
    rows = BlockRateHour.objects.filter(hour__gte=start, hour__lt=end, dimension__in={d for d, _ in keys},
                                        key__in={k for _, k in keys})
    by_key: dict[tuple[str, str], dict] = {}
    for row in rows:
        if (row.dimension, row.key) in keys:
            by_key.setdefault((row.dimension, row.key), {})[row.hour] = row
    series = []
    for (dimension, key), alert in keys.items():
        hours_map = by_key.get((dimension, key), {})
        series.append({
            "label": f"{dimension} {key}", "baseline": round(100 * alert.baseline_rate, 1),
            "rate": [round(100 * hours_map[h].blocked / hours_map[h].total, 1) if h in hours_map else None
                     for h in hour_list],
            "alert_at": alert.window_start.isoformat(),
        })
    return {"hours": [h.strftime("%m-%d %H:00") for h in hour_list], "series": series}


# Reviewing ------------------------------------------------------------------------------------------


def moves_money(decision: Decision) -> bool:
    try:
        tool = tool_registry.get(decision.tool)
    except tool_registry.UnknownTool:
        return False
    return tool.acts_on == tool_registry.PAYMENT or tool_registry.AMOUNT in tool.roles.values()


def failed_checks(decision: Decision) -> list[str]:
    """The code checks this action failed, each in one sentence for the person deciding: what a
    confirmation restates before an authorization."""
    evidence = decision.evidence or {}
    failed = []
    if decision.validator_failure:
        failed.append("The validator could not give a verdict, so the action was blocked.")
    for result in (evidence.get("arguments") or {}).get("results") or ():
        if not result.get("ok", True):
            name = str(result.get("argument", "")).replace("_", " ")
            failed.append(f"{name.capitalize()} “{result.get('value', '')}”: {result.get('reason') or 'not what you wrote'}")
    for value in (evidence.get("dataflow") or {}).get("values") or ():
        if value.get("tainted"):
            failed.append(f"“{value.get('value', '')}” was written only by someone else ({value.get('source', '')}).")
    for quote in evidence.get("quotes") or ():
        if not quote.get("by_user"):
            where = "found nowhere in the task or your memory" if not quote.get("found") else "not your own words"
            failed.append(f"The assistant quoted “{quote.get('quote', '')}”: {where}.")
    return failed


def needs_confirmation(decision: Decision) -> bool:
    """Where checks failed or money moves, authorizing is a deliberate second step."""
    return moves_money(decision) or bool(failed_checks(decision))


def next_waiting(user, *, besides: int | None = None) -> Decision | None:
    """The decision at the top of the user's waiting list, other than `besides`: where the review
    goes after a verdict."""
    queryset = decision_list(user, Decision.Status.BLOCKED).defer(*_LIST_DEFERRED)
    if besides is not None:
        queryset = queryset.exclude(pk=besides)
    return queryset.first()


_LIST_DEFERRED = ("history", "evidence", "execution_result", "justification", "reasoning", "failure_reason",
                  "suggested_next_step")
