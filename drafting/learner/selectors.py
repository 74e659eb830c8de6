"""The learner's reads: proposals with their evidence, and the judge audit (issue 15 part 7).

The judge audit, per judge target and prompt variant, over the comparisons the user may see
(identical replays are left out: the judge was not asked):
- swap agreement: the share of comparisons whose two orders picked the same draft. A judge with
  no position bias agrees with itself; one that favours a position disagrees whenever the
  drafts differ. Also the share of votes for position A (0.5 is unbiased).
- length bias: among votes that picked a draft where the two differ in length, the share that
  picked the longer one, next to the same share for the deterministic similarity's own choice on
  the same comparisons (what "closer to the sent email" alone would give). The bias is the
  difference; a judge that prefers length beyond closeness shows a positive one.
- agreement with the deterministic similarity (drafting's pair similarity): among decided
  comparisons where the similarities differ, the share where the judge picked the draft with the
  higher similarity.
- length against closeness: among votes on comparisons where the closer draft (by that
  similarity) is the shorter one, the share that picked the longer draft anyway, with its 95 %
  Wilson interval. A judge that rewards length picks it; one that reads closeness does not.

The audit can fail: from MIN_AUDIT comparisons a judge is flagged when its swap agreement's
interval lies wholly below SWAP_FLOOR (it contradicts itself when the positions swap), when it
picks the longer draft against closeness more often than not (the interval's lower bound above
1/2), or on the older rules below. While a judge is flagged the learner accepts nothing it judged
(drafting.learner.services._decide) and its pages say why (`flagged_judges`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from django.db.models import QuerySet
from django.db.models.functions import Length
from django.http import Http404

from lindy.redaction import redacted

from ..models import Comparison, Proposal
from . import judging, stats
from .permissions import visible_proposals

AUDIT_ROWS = 5000  # the newest comparisons per audit
MIN_AUDIT = 10  # comparisons before a flag is raised
SWAP_FLOOR = 0.8  # a judge whose two orders surely agree less often than this is position-biased
SIM_EPSILON = 0.005


def proposal_list(user, *, status: str | None = None) -> QuerySet[Proposal]:
    queryset = visible_proposals(user, Proposal.objects.all()).select_related("user")
    if status:
        queryset = queryset.filter(status=status)
    return queryset.defer("base_context", "proposed_context", "diff").order_by("-created_at", "-pk")


def proposal_get(user, proposal_id) -> Proposal:
    try:
        pk = int(proposal_id)
    except (TypeError, ValueError):
        raise Http404("No such proposal.") from None
    proposal = visible_proposals(user, Proposal.objects.all()).select_related("user", "written_revision").filter(
        pk=pk).first()
    if proposal is None:
        raise Http404("No such proposal.")
    return for_viewer(user, proposal)


# A proposal's text is the member's: their drafting document before and after, and what the
# learner read in their mail. A team admin sees that it exists, its status and its numbers.
PRIVATE_PROPOSAL_FIELDS = ("base_context", "proposed_context", "diff", "summary", "decision_reason")


def for_viewer(user, proposal: Proposal) -> Proposal:
    """The proposal as `user` may read it: their own whole, anyone else's with its text hidden."""
    return proposal if proposal.user_id == user.pk else redacted(proposal, PRIVATE_PROPOSAL_FIELDS)


def proposals_for_viewer(user, proposals) -> list[Proposal]:
    return [for_viewer(user, p) for p in proposals]


def cited_pairs(user, proposal: Proposal, limit: int = 50) -> list:
    """The draft-sent pairs a proposal learned from; the subjects of the member's mail only to them."""
    pairs = list(proposal.proposed_from.select_related("draft").order_by("pk")[:limit])
    if proposal.user_id == user.pk:
        return pairs
    hidden = []
    for pair in pairs:
        clone = copy.copy(pair)
        clone.draft = redacted(pair.draft, ("inbound_subject", "inbound_body", "inbound_from", "body", "subject"))
        hidden.append(clone)
    return hidden


def comparisons_of(proposal: Proposal) -> QuerySet[Comparison]:
    return proposal.comparisons.select_related("pair").order_by("pk")


def status_counts(user) -> dict[str, int]:
    from django.db.models import Count

    rows = visible_proposals(user, Proposal.objects.all()).values_list("status").annotate(n=Count("pk"))
    return dict(rows)


@dataclass
class AuditRow:
    target: str
    variant: str
    comparisons: int = 0
    votes: int = 0
    swap_agreement: float | None = None
    position_a_rate: float | None = None
    longer_rate: float | None = None
    similarity_longer_rate: float | None = None
    length_bias: float | None = None
    similarity_agreement: float | None = None
    swap_interval: tuple[float, float] | None = None
    length_votes: int = 0  # votes where the closer draft was the shorter one
    longer_against_closeness: float | None = None
    longer_against_interval: tuple[float, float] | None = None
    flags: list[str] = field(default_factory=list)
    # raw counts
    _agree: int = 0
    _a: int = 0
    _decisive_votes: int = 0
    _longer: int = 0
    _length_votes: int = 0
    _sim_longer: int = 0
    _sim_length: int = 0
    _sim_agree: int = 0
    _sim_decided: int = 0
    _against_longer: int = 0

    @property
    def flagged(self) -> bool:
        return bool(self.flags)

    def figures(self) -> dict:
        """The audit's numbers, for the simulation's report and the JSON of its run."""
        def interval(pair):
            return [round(pair[0], 3), round(pair[1], 3)] if pair else None

        return {"judge": f"{self.target}/{self.variant}", "comparisons": self.comparisons,
                "swap_agreement": None if self.swap_agreement is None else round(self.swap_agreement, 3),
                "swap_interval": interval(self.swap_interval), "length_votes": self.length_votes,
                "longer_against_closeness": (None if self.longer_against_closeness is None
                                             else round(self.longer_against_closeness, 3)),
                "longer_against_interval": interval(self.longer_against_interval),
                "length_bias": None if self.length_bias is None else round(self.length_bias, 3),
                "flags": list(self.flags)}


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def audit_rows(comparisons) -> list[AuditRow]:
    """Pure: the audit of (target, variant, first_vote, second_vote, outcome, old_sim, new_sim,
    old_len, new_len) tuples."""
    rows: dict[tuple[str, str], AuditRow] = {}
    for target, variant, first, second, outcome, old_sim, new_sim, old_len, new_len in comparisons:
        row = rows.setdefault((target, variant), AuditRow(target=target or "?", variant=variant or "default"))
        row.comparisons += 1
        row._agree += judging.swap_agrees(first, second)
        sims_differ = old_sim is not None and new_sim is not None and abs(new_sim - old_sim) > SIM_EPSILON
        for vote, new_first in ((first, False), (second, True)):
            if vote not in ("A", "B"):
                continue
            row.votes += 1
            row._a += vote == "A"
            if old_len != new_len:
                picked_new = judging.preference(vote, new_first=new_first) == "new"
                row._length_votes += 1
                row._longer += picked_new == (new_len > old_len)
                if sims_differ and (new_sim > old_sim) != (new_len > old_len):  # the shorter one is closer
                    row.length_votes += 1
                    row._against_longer += picked_new == (new_len > old_len)
        if old_len != new_len and sims_differ:
            row._sim_length += 1
            row._sim_longer += (new_sim > old_sim) == (new_len > old_len)
        if outcome in (judging.WIN, judging.LOSS) and sims_differ:
            row._sim_decided += 1
            row._sim_agree += (outcome == judging.WIN) == (new_sim > old_sim)
    out = []
    for row in rows.values():
        row.swap_agreement = _rate(row._agree, row.comparisons)
        row.position_a_rate = _rate(row._a, row.votes)
        row.longer_rate = _rate(row._longer, row._length_votes)
        row.similarity_longer_rate = _rate(row._sim_longer, row._sim_length)
        if row.longer_rate is not None and row.similarity_longer_rate is not None:
            row.length_bias = row.longer_rate - row.similarity_longer_rate
        row.similarity_agreement = _rate(row._sim_agree, row._sim_decided)
        row.swap_interval = stats.wilson(row._agree, row.comparisons)
        row.longer_against_closeness = _rate(row._against_longer, row.length_votes)
        row.longer_against_interval = stats.wilson(row._against_longer, row.length_votes)
        if row.comparisons >= MIN_AUDIT:
            if row.swap_interval is not None and row.swap_interval[1] < SWAP_FLOOR:
                row.flags.append(
                    f"position bias: the two orders agree on {row._agree} of {row.comparisons} comparisons "
                    f"({row.swap_agreement:.0%}, 95% interval {row.swap_interval[0]:.0%}–{row.swap_interval[1]:.0%}, "
                    f"below {SWAP_FLOOR:.0%})")
            if row.longer_against_interval is not None and row.longer_against_interval[0] > 0.5:
                low, high = row.longer_against_interval
                row.flags.append(
                    f"length bias: where the shorter draft was closer to the sent email it picked the longer one "
                    f"{row._against_longer} of {row.length_votes} times ({row.longer_against_closeness:.0%}, "
                    f"95% interval {low:.0%}–{high:.0%})")
            if row.position_a_rate is not None and abs(row.position_a_rate - 0.5) > 0.25:
                row.flags.append(f"favours position {'A' if row.position_a_rate > 0.5 else 'B'} "
                                 f"({max(row.position_a_rate, 1 - row.position_a_rate):.0%} of votes)")
            if row.length_bias is not None and abs(row.length_bias) > 0.25 and not any(
                    f.startswith("length bias") for f in row.flags):
                row.flags.append(f"length bias: picks the {'longer' if row.length_bias > 0 else 'shorter'} draft "
                                 f"{abs(row.length_bias):.0%} more often than closeness explains")
            if row.similarity_agreement is not None and row.similarity_agreement < 0.6:
                row.flags.append(f"agrees with the deterministic similarity on only {row.similarity_agreement:.0%}")
        out.append(row)
    return sorted(out, key=lambda r: (r.target, r.variant))


def judge_audit(user, *, proposals: QuerySet[Proposal] | None = None) -> list[AuditRow]:
    """The audit over the comparisons of the proposals `user` may see (the newest AUDIT_ROWS)."""
    scope = proposals if proposals is not None else visible_proposals(user, Proposal.objects.all())
    rows = (Comparison.objects.filter(proposal__in=scope.values("pk"), identical=False)
            .exclude(first_vote="").order_by("-pk")
            .annotate(old_len=Length("old_draft"), new_len=Length("new_draft"))
            .values_list("judge_target", "judge_variant", "first_vote", "second_vote", "outcome",
                         "old_similarity", "new_similarity", "old_len", "new_len")[:AUDIT_ROWS])
    return audit_rows(rows)


def _audit_values(queryset):
    return (queryset.filter(identical=False).exclude(first_vote="").order_by("-pk")
            .annotate(old_len=Length("old_draft"), new_len=Length("new_draft"))
            .values_list("judge_target", "judge_variant", "first_vote", "second_vote", "outcome",
                         "old_similarity", "new_similarity", "old_len", "new_len"))


def judge_audit_of(target: str, variant: str) -> AuditRow | None:
    """The audit of one judge (target, prompt variant) over its newest comparisons, whoever's:
    what the learner's gate asks before accepting anything that judge decided."""
    rows = audit_rows(_audit_values(Comparison.objects.filter(judge_target=target, judge_variant=variant))[:AUDIT_ROWS])
    return rows[0] if rows else None


def flagged_judges() -> list[AuditRow]:
    """Every judge whose audit (over its newest comparisons) is flagged: the learner accepts
    nothing they decide. Numbers only (no drafts), so any learner page may show them."""
    judges = (Comparison.objects.filter(identical=False).exclude(first_vote="").order_by()
              .values_list("judge_target", "judge_variant").distinct())
    out = []
    for target, variant in judges:
        row = judge_audit_of(target, variant)
        if row is not None and row.flagged:
            out.append(row)
    return out


def swap_agreement(proposals: QuerySet[Proposal]) -> float | None:
    rows = (Comparison.objects.filter(proposal__in=proposals.values("pk"), identical=False).exclude(first_vote="")
            .values_list("first_vote", "second_vote"))
    votes = list(rows)
    return _rate(sum(judging.swap_agrees(a, b) for a, b in votes), len(votes))


def proposal_counts(*, user, team_id: int | None, days: int, period: str = "day") -> list[dict]:
    """Proposals decided per day or week, accepted and rejected, for the drafting charts: the
    user's own, or (team_id, a team the user administers) the team's. One grouped query."""
    from datetime import timedelta

    from django.db.models import Count, Q
    from django.db.models.functions import TruncDate, TruncWeek
    from django.utils import timezone

    since = timezone.now() - timedelta(days=days)
    scope = visible_proposals(user, Proposal.objects.all())
    scope = scope.filter(team_id=team_id) if team_id is not None else scope.filter(user=user)
    trunc = TruncWeek if period == "week" else TruncDate
    rows = (scope.filter(decided_at__gte=since).order_by().annotate(period=trunc("decided_at")).values("period")
            .annotate(accepted=Count("pk", filter=Q(status=Proposal.Status.ACCEPTED)),
                      rejected=Count("pk", filter=Q(status=Proposal.Status.REJECTED)))
            .order_by("period"))
    return [{"period": (row["period"].date() if hasattr(row["period"], "date") else row["period"]).isoformat(),
             "accepted": row["accepted"], "rejected": row["rejected"]} for row in rows]
