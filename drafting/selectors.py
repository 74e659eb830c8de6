"""Reads of the drafting app: the user's drafts, and the numbers of the charts page.

Rates are computed over SCORABLE pairs; unscorable pairs are counted beside them (never
silently dropped), so every chart says how many pairs it could not score."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import date, timedelta

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDate, TruncWeek
from django.http import Http404
from django.urls import reverse
from django.utils import timezone

from memory.models import FileSystem

from . import permissions
from .models import Draft, DraftPair

STATUS_FILTERS = {
    "all": None,
    "drafted": [Draft.Status.SAVED, Draft.Status.RECORDED],
    "skipped": [Draft.Status.SKIPPED],
    "failed": [Draft.Status.FAILED],
    "pending": [Draft.Status.PENDING],
}
BINS = 10  # similarity histogram: [0, 0.1), ..., [0.9, 1.0]


def drafts_for(user, status: str = "all") -> QuerySet[Draft]:
    """The user's own drafts (in their teams), newest first, with their pairs."""
    if not permissions.can_view_drafts(user):
        return Draft.objects.none()
    drafts = (Draft.objects.filter(user=user, team_id__in=permissions.team_ids(user))
              .select_related("pair").order_by("-created_at", "-pk"))
    statuses = STATUS_FILTERS.get(status)
    return drafts.filter(status__in=statuses) if statuses else drafts


def draft_get(user, draft_id) -> Draft:
    draft = drafts_for(user).select_related("context_revision").filter(pk=draft_id).first()
    if draft is None:
        raise Http404("No such draft.")
    return draft


def own_memory_id(user) -> int | None:
    """The user's own memory file system, where their context document (drafting.md) lives."""
    return FileSystem.objects.filter(owner=user).values_list("pk", flat=True).first()


def status_counts(user) -> dict[str, int]:
    rows = drafts_for(user).order_by().values("status").annotate(n=Count("pk"))
    return {row["status"]: row["n"] for row in rows}


# --- Charts ------------------------------------------------------------------------------------

def pairs_in_scope(*, user, team_id: int | None, days: int) -> QuerySet[DraftPair]:
    """The pairs of the last `days` days: the user's own, or (a team admin) the team's."""
    since = timezone.now() - timedelta(days=days)
    pairs = DraftPair.objects.filter(created_at__gte=since)
    if team_id is None:
        return pairs.filter(user=user, team_id__in=permissions.team_ids(user))
    if not permissions.can_view_team_charts(user, team_id):
        raise Http404("Team charts are for the team's admins.")
    return pairs.filter(team_id=team_id)


def heavy_edit_series(pairs: QuerySet[DraftPair], *, period: str = "day") -> dict:
    """Heavy-edit rate per period, split by drafting target and prompt variant:
    {"periods": [iso dates], "series": [{"target", "variant", "rate": [% or None], "heavy": [..],
    "scorable": [..], "unscorable": [..]}], "total": {...}}."""
    trunc = TruncWeek if period == "week" else TruncDate
    rows = (pairs.order_by().annotate(period=trunc("created_at"))
            .values("period", "draft__target_name", "draft__prompt_variant")
            .annotate(n_scorable=Count("pk", filter=Q(scorable=True)),
                      n_heavy=Count("pk", filter=Q(scorable=True, heavy_edit=True)),
                      n_unscorable=Count("pk", filter=Q(scorable=False))))
    cells: dict[tuple[str, str], dict[str, dict]] = defaultdict(dict)
    periods: set[str] = set()
    for row in rows:
        when = row["period"]
        key = (when.date() if hasattr(when, "date") else when).isoformat()
        periods.add(key)
        cells[(row["draft__target_name"] or "?", row["draft__prompt_variant"] or "default")][key] = row
    labels = sorted(periods)
    series: list[dict] = []
    sums = {"scorable": 0, "heavy": 0, "unscorable": 0}
    for (target, variant), by_period in sorted(cells.items()):
        out: dict = {"target": target, "variant": variant, "rate": [], "heavy": [], "scorable": [], "unscorable": []}
        for label in labels:
            row = by_period.get(label) or {"n_scorable": 0, "n_heavy": 0, "n_unscorable": 0}
            out["rate"].append(round(100 * row["n_heavy"] / row["n_scorable"], 1) if row["n_scorable"] else None)
            for field in ("heavy", "scorable", "unscorable"):
                out[field].append(row[f"n_{field}"])
                sums[field] += row[f"n_{field}"]
        series.append(out)
    totals: dict = {**sums, "rate": round(100 * sums["heavy"] / sums["scorable"], 1) if sums["scorable"] else None}
    return {"period": "week" if period == "week" else "day", "periods": labels, "series": series, "total": totals}


def similarity_histogram(pairs: QuerySet[DraftPair]) -> dict:
    """Counts of scorable pairs per similarity tenth, and the unscorable count apart."""
    counts = [0] * BINS
    for value in pairs.filter(scorable=True).values_list("similarity", flat=True).iterator():
        counts[min(int((value or 0.0) * BINS), BINS - 1)] += 1
    return {"bins": [f"{i / BINS:.1f}" for i in range(BINS)], "counts": counts,
            "unscorable": pairs.filter(scorable=False).count()}


# Proposals accepted and rejected by the learner (issue 15 part 5) are another app's records: it
# registers a reader here; until then the charts page shows an empty state that says so.
ProposalCounts = Callable[..., list[dict]]  # (user=, team_id=, days=, period=) -> [{"period", "accepted", "rejected"}]
_proposal_counts: list[ProposalCounts] = []


def register_proposal_counts(reader: ProposalCounts) -> None:
    _proposal_counts[:] = [reader]


def proposal_counts(*, user, team_id: int | None, days: int, period: str = "day") -> list[dict] | None:
    """None when no learner is installed (the page says so), else rows per period."""
    if not _proposal_counts:
        return None
    return _proposal_counts[0](user=user, team_id=team_id, days=days, period=period)


def charts(*, user, team_id: int | None, days: int, period: str) -> dict:
    pairs = pairs_in_scope(user=user, team_id=team_id, days=days)
    return {
        "scope": {"team_id": team_id, "days": days, "since": (date.today() - timedelta(days=days)).isoformat()},
        "heavy_edit": heavy_edit_series(pairs, period=period),
        "similarity": similarity_histogram(pairs),
        "proposals": proposal_counts(user=user, team_id=team_id, days=days, period=period),
    }


HOME_DAYS = 7


def heavy_edit_summary(user) -> dict | None:
    """The home page's heavy-edit tile: the user's own pairs of the last week, in one aggregate
    query; None (no tile) when nothing has been drafted for them in that time."""
    totals = pairs_in_scope(user=user, team_id=None, days=HOME_DAYS).aggregate(
        scored=Count("pk", filter=Q(scorable=True)),
        heavy=Count("pk", filter=Q(scorable=True, heavy_edit=True)),
        unscorable=Count("pk", filter=Q(scorable=False)),
    )
    if not totals["scored"] and not totals["unscorable"]:
        return None
    return {**totals, "rate": totals["heavy"] / totals["scored"] if totals["scored"] else None,
            "days": HOME_DAYS, "url": reverse("drafting-list")}
