"""lindy.redaction: a viewer's copy hides private text, and never reads a deferred field to do it."""

from __future__ import annotations

import pytest
from django.utils import timezone

from lindy.models import Meeting
from lindy.redaction import HIDDEN, redacted
from tests.factories import TeamFactory, member_of

pytestmark = pytest.mark.django_db


def test_deferred_fields_are_hidden_without_a_query(django_assert_num_queries):
    team = TeamFactory()
    owner = member_of(team)
    Meeting.objects.create(team=team, owner=owner, title="Board prep", notes="The private notes",
                           occurred_at=timezone.now())
    meeting = Meeting.objects.defer("notes").get()
    with django_assert_num_queries(0):
        copy = redacted(meeting, ["notes", "title"])
    assert copy.notes == HIDDEN and copy.title == HIDDEN
    with pytest.raises(RuntimeError):
        copy.save()
    # The row read through the original is untouched, and an empty field stays empty.
    assert meeting.notes == "The private notes"
    assert redacted(Meeting(title="", notes=""), ["notes"]).notes == ""
