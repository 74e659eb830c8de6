"""The context document (drafting.md in the user's memory) and the replay of a draft's call
with only the context changed."""

from __future__ import annotations

import pytest

from drafting import prompts, services, similarity
from drafting.models import Draft
from memory import services as memory_services
from memory.draft import StaleVersion, VerificationFailed
from memory.models import MemoryFile, Revision
from router.models import ModelCall
from tests.conftest import client_for

from .factories import draft

pytestmark = pytest.mark.django_db

LEGAL = "## Contacts\n- Dana Lee <dana@acme.test>: Head of Legal (msa, legal)\n## Style\n- Sign-off: Cheers\n- Name: Umar\n"


def test_context_document_is_a_linked_revisioned_revertible_memory_file(cast):
    first = services.context_write(user=cast.member, text="## Style\n- Sign-off: Best\n", author="learner",
                                   reason="Initial context")
    fs = memory_services.filesystem_for_user(cast.member)
    assert first.author_kind == Revision.AuthorKind.LEARNER and first.source_kind == "drafting_context"
    assert "(drafting.md)" in MemoryFile.objects.get(filesystem=fs, path="index.md").content
    second = services.context_write(user=cast.member, text=LEGAL, author="learner", reason="Dana joined as legal")
    doc = services.context_read(cast.member)
    assert (doc.text, doc.revision_id, doc.version) == (LEGAL, second.pk, 2)
    # The user edits it like any memory file; a stale base version is refused.
    with pytest.raises(StaleVersion):
        services.context_write(user=cast.member, text="mine", author=cast.member, reason="edit", base_version=1)
    mine = services.context_write(user=cast.member, text=LEGAL + "- Greeting: Hey\n", author=cast.member,
                                  reason="my edit", base_version=2)
    assert mine.author_kind == Revision.AuthorKind.PERSON and mine.author == cast.member
    with pytest.raises(PermissionError):
        services.context_write(user=cast.member, text="x", author=cast.admin, reason="not theirs")
    # Revertible like every revision.
    memory_services.revision_revert(revision=mine, author_kind="person", author=cast.member)
    assert services.context_read(cast.member).text == LEGAL
    # Within budget: an over-budget document is refused and nothing changes.
    fs.file_token_budget = 50
    fs.save()
    with pytest.raises(VerificationFailed):
        services.context_write(user=cast.member, text="word " * 2000, author="learner", reason="too long")
    assert services.context_read(cast.member).text == LEGAL
    assert client_for(cast.member).get(f"/memory/{fs.pk}/files/drafting.md").status_code == 200


def test_replay_changes_only_the_context_block_and_is_recorded(cast):
    original = draft(cast.member, cast.team)
    original.request = prompts.build_draft_request(
        context="", thread=prompts.Thread.from_dict(original.thread), variant="default")
    original.save()
    before = original.request
    replayed = prompts.with_context(before, LEGAL)
    assert replayed["messages"] == before["messages"] and replayed["system"][0] == before["system"][0]
    assert replayed["system"][1] != before["system"][1] and "Dana Lee" in replayed["system"][1]["text"]

    plain = services.draft_replay(draft=original, context="")
    with_style = services.draft_replay(draft=original, context=LEGAL)
    assert "\n\nBest,\n" in plain and "Cheers," not in plain  # the default sign-off, not the context's
    assert "Cheers," in with_style and with_style.rstrip().endswith("Umar")
    calls = ModelCall.objects.filter(route="email.draft").order_by("pk")
    assert calls.count() == 2 and {c.arm for c in calls} == {"eval"}
    assert Draft.objects.get(pk=original.pk).request == before  # the recorded request is untouched


def test_replay_of_a_draft_with_no_request_is_refused(cast):
    empty = draft(cast.member, cast.team)
    empty.request = {}
    empty.save()
    with pytest.raises(ValueError, match="no recorded request"):
        services.draft_replay(draft=empty, context="x")


def test_the_similarity_in_use_is_the_one_that_measured_best():
    measured = similarity.measure_choice()
    chosen, other = measured[similarity.MEASURE], measured["dice_bigrams"]
    assert chosen["auc"] >= other["auc"] and chosen["accuracy"] >= other["accuracy"]
    assert chosen["gap"] > other["gap"]
    assert chosen["light_mean"] - chosen["heavy_mean"] > other["light_mean"] - other["heavy_mean"]


def test_cleaning_removes_quotes_and_signatures():
    text = ("Hi Jane,\n\nFriday works.\n\n-- \nUmar Khan | Initech\n\n"
            "On Mon, Dec 1, 2026 at 9:00 AM Jane <jane@x.test> wrote:\n> Can we sign?\n")
    assert similarity.clean(text) == "Hi Jane, Friday works."
    assert similarity.score("draft", "> only a quote").scorable is False
    assert similarity.score("", "a reply").reason == "The draft has no text."
