"""Meetings: for a user, the meetings they own and those shared with them; for the team,
the public meeting library."""

from __future__ import annotations

from django.db.models import Q
from django.urls import reverse

from lindy.models import Meeting

from ..models import Item
from .base import Fetched, Source, SourceItem

BATCH = 500


class MeetingsSource(Source):
    kind = "meetings"

    def _queryset(self, filesystem):
        if filesystem.kind == "team":
            return Meeting.objects.filter(team_id=filesystem.team_id, public=True)
        user = filesystem.owner
        teams = user.memberships.values("team_id")
        return Meeting.objects.filter(Q(owner=user) | Q(shared_with=user), team_id__in=teams).distinct()

    def fetch(self, filesystem, cursor: dict) -> Fetched:
        # Meetings are created once; their primary key only grows, so it is the cursor.
        after = int(cursor.get("after_id", 0))
        meetings = list(self._queryset(filesystem).filter(pk__gt=after).select_related("owner").order_by("pk")[:BATCH])
        items = [
            SourceItem(
                external_id=f"meeting-{m.pk}", title=m.title, author=m.owner.email, occurred_at=m.occurred_at,
                # A user's own meetings are their words; one a teammate shared is the teammate's.
                # The team library is the team's own.
                author_kind=(Item.AuthorKind.OWNER if filesystem.kind == "team" or m.owner_id == filesystem.owner_id
                             else Item.AuthorKind.TEAMMATE),
                author_name=m.owner.display_name,
                reference=reverse("meeting-detail", args=[m.pk]),
                text=f"Meeting: {m.title} ({m.occurred_at:%Y-%m-%d})\n{m.notes}".strip(),
            )
            for m in meetings
        ]
        return Fetched(items=items, cursor={"after_id": meetings[-1].pk if meetings else after})

    def describe(self, filesystem) -> list[str]:
        if filesystem.kind == "team":
            return ["Meetings in the team's public meeting library"]
        return ["Meetings you own and meetings shared with you"]
