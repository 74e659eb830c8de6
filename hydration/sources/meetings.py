"""Meetings: for a user, the meetings they own and those shared with them; for the team,
the public meeting library."""

from __future__ import annotations

import re

from django.db.models import Q
from django.urls import reverse

from lindy.models import Meeting

from ..models import Item
from .base import Fetched, Source, SourceItem

BATCH = 500
# "Umar: …", "- Umar Khan: …", "[Umar] …", "Umar — …": a line attributed to a speaker.
_SPEAKER = re.compile(r"^\s*(?:[-*•]\s*)?(?:\[([^\]]{1,60})\]|([^:\n\[\]—–]{1,60}?)\s*(?::|—|–))\s*(.*)$")


def _names(user) -> set[str]:
    """How meeting notes name the user: their name, its first word, their address and its local part."""
    names = {user.email.casefold(), user.email.split("@")[0].casefold()}
    if user.name:
        names |= {user.name.casefold(), user.name.split()[0].casefold()}
    return {n for n in names if n}


def split_by_speaker(notes: str, user) -> tuple[str, str]:
    """(the lines attributed to `user`, every other line). Notes are the user's words only where a
    line names them as its speaker; the rest may be anyone's in the meeting."""
    names = _names(user)
    own: list[str] = []
    rest: list[str] = []
    for line in (notes or "").splitlines():
        match = _SPEAKER.match(line)
        speaker = (match.group(1) or match.group(2) or "").strip().casefold() if match else ""
        if speaker and speaker in names and match:
            own.append(match.group(3))  # their words, without the speaker label
        else:
            rest.append(line)
    return "\n".join(own).strip(), "\n".join(rest).strip()


_MARKER = 918273645


def _link():
    """reverse("meeting-detail", args=[pk]) for many meetings, resolving the URL pattern once."""
    url = reverse("meeting-detail", args=[_MARKER])
    head, marker, tail = url.partition(str(_MARKER))
    assert marker and str(_MARKER) not in tail, url
    return lambda pk: f"{head}{pk}{tail}"


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
        # Only what an item is made of: a meeting's owner is a whole user row otherwise.
        meetings = list(self._queryset(filesystem).filter(pk__gt=after).select_related("owner")
                        .only("pk", "title", "notes", "occurred_at", "owner_id", "owner__email", "owner__name")
                        .order_by("pk")[:BATCH])
        items = []
        link = _link()
        for m in meetings:
            common = {"title": m.title, "author": m.owner.email, "occurred_at": m.occurred_at,
                      "author_name": m.owner.display_name, "reference": link(m.pk)}
            heading = f"Meeting: {m.title} ({m.occurred_at:%Y-%m-%d})"
            if filesystem.kind == "team":
                # The team library is the team's own.
                items.append(SourceItem(external_id=f"meeting-{m.pk}", author_kind=Item.AuthorKind.OWNER,
                                        text=f"{heading}\n{m.notes}".strip(), **common))
                continue
            own, rest = split_by_speaker(m.notes, filesystem.owner) if m.owner_id == filesystem.owner_id else ("", m.notes)
            if own:
                items.append(SourceItem(external_id=f"meeting-{m.pk}-own", author_kind=Item.AuthorKind.OWNER,
                                        text=f"{heading}\n{own}", **common))
            if rest or not own:
                # Lines no one is named on may be anyone's in the meeting; one a teammate shared is theirs.
                kind = Item.AuthorKind.MIXED if m.owner_id == filesystem.owner_id else Item.AuthorKind.TEAMMATE
                named = common if kind == Item.AuthorKind.TEAMMATE else {**common, "author_name": f"the meeting “{m.title}”"}
                items.append(SourceItem(external_id=f"meeting-{m.pk}", author_kind=kind,
                                        text=f"{heading}\n{rest}".strip(), **named))
        return Fetched(items=items, cursor={"after_id": meetings[-1].pk if meetings else after})

    def describe(self, filesystem) -> list[str]:
        if filesystem.kind == "team":
            return ["Meetings in the team's public meeting library"]
        return ["Meetings you own and meetings shared with you"]
