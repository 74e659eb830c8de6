"""Deleting a user removes their memory, items, messages, conversations and tokens, says what
was removed (counts), and leaves other people's data alone."""

from __future__ import annotations

from django.utils import timezone

from channels_app.models import Conversation, InboundAttachment, InboundMessage, OutboundMessage
from channels_app.services import inbound_store
from google_workspace.models import GmailAccount
from hydration.models import Item
from lindy import services
from lindy.models import AgentTask, ApiToken, User
from memory import services as memory_services
from memory.models import FileSystem, MemoryFile, Revision
from tests.channels_app.factories import SendingNumberFactory, TextingProfileFactory
from tests.conftest import client_for
from tests.factories import AgentTaskFactory
from tests.memory.factories import write_linked


def _everything(user, team, number, phone):
    own = memory_services.filesystem_for_user(user)
    write_linked(own, {"people/me.md": "Likes tea."}, author=user, author_kind="person")
    write_linked(team.memory_filesystem, {f"team/notes-{user.pk}.md": "Team text."}, author=user, author_kind="person")
    Item.objects.create(filesystem=own, source="gmail", external_id=f"m-{user.pk}", text="Hi", occurred_at=timezone.now())
    services.api_token_create(user=user, name="cli")
    GmailAccount.objects.create(user=user, email=user.email, access_token="a", refresh_token="r")
    TextingProfileFactory(user=user, phone=phone)
    inbound_store(channel="imessage", provider_id=f"p-{user.pk}", from_phone=phone, to_phone=number.phone,
                  text="remind me", attachments=None)
    AgentTaskFactory(owner=user, team=team)


def test_user_delete_removes_their_data_and_counts_it(cast):
    number = SendingNumberFactory()
    _everything(cast.member, cast.team, number, "+16505550101")
    _everything(cast.admin, cast.team, number, "+16505550102")
    member_pk = cast.member.pk
    message = InboundMessage.objects.get(profile__user=cast.member)
    InboundAttachment.objects.create(message=message, filename="a.jpg", mime_type="image/jpeg", source_url="https://x")
    before_admin = (InboundMessage.objects.filter(profile__user=cast.admin).count(),
                    Item.objects.filter(filesystem__owner=cast.admin).count(), ApiToken.objects.filter(user=cast.admin).count())
    team_revisions = Revision.objects.filter(filesystem=cast.team.memory_filesystem).count()

    preview = services.user_delete(user=cast.member, dry_run=True)
    assert User.objects.filter(pk=member_pk).exists()  # a dry run changes nothing
    assert InboundMessage.objects.filter(pk=message.pk).exists()

    removed = services.user_delete(user=cast.member)
    assert removed.counts == preview.counts
    counts = removed.counts
    assert counts["lindy.User"] == 1
    assert counts["memory.FileSystem"] == 1 and counts["memory.MemoryFile"] == 2 and counts["memory.Revision"] == 2
    assert counts["hydration.Item"] == 1
    assert counts["channels_app.InboundMessage"] == 1 and counts["channels_app.InboundAttachment"] == 1
    assert counts["channels_app.Conversation"] == 1 and counts["channels_app.TextingProfile"] == 1
    assert counts["lindy.ApiToken"] == 1 and counts["google_workspace.GmailAccount"] == 1
    assert counts["lindy.AgentTask"] == 1
    assert "memory files" in dict(removed.lines())
    assert removed.summary().startswith(f"Deleted member@acme.example and {removed.total} rows")

    assert not FileSystem.objects.filter(owner_id=member_pk).exists()
    assert not InboundMessage.objects.filter(text="remind me", profile__isnull=True).exists()
    assert not Conversation.objects.filter(profile__user_id=member_pk).exists()
    assert not OutboundMessage.objects.filter(user_id=member_pk).exists()
    assert not AgentTask.objects.filter(owner_id=member_pk).exists()
    # Other people's data stays; team memory keeps the member's revisions, without their name.
    assert (InboundMessage.objects.filter(profile__user=cast.admin).count(),
            Item.objects.filter(filesystem__owner=cast.admin).count(),
            ApiToken.objects.filter(user=cast.admin).count()) == before_admin
    assert Revision.objects.filter(filesystem=cast.team.memory_filesystem).count() == team_revisions
    assert MemoryFile.objects.filter(filesystem=cast.team.memory_filesystem, path=f"team/notes-{member_pk}.md").exists()


def test_admin_action_previews_then_deletes_with_counts(cast):
    memory_services.filesystem_for_user(cast.member)
    services.api_token_create(user=cast.member, name="cli")
    admin = client_for(cast.superuser)
    form = {"action": "delete_with_data", "_selected_action": [cast.member.pk]}
    preview = admin.post("/admin/lindy/user/", form)
    assert preview.status_code == 200
    html = preview.content.decode()
    assert 'data-user-removal="member@acme.example"' in html and "Memory files" in html and "Api tokens" in html
    assert User.objects.filter(pk=cast.member.pk).exists()

    done = admin.post("/admin/lindy/user/", {**form, "confirm": "yes"}, follow=True)
    assert done.status_code == 200
    assert not User.objects.filter(pk=cast.member.pk).exists()
    assert "Deleted member@acme.example and" in done.content.decode()

    # Not for people without the admin, and not oneself.
    assert client_for(cast.admin).post("/admin/lindy/user/", form).status_code == 302  # to the admin login
    client_for(cast.superuser).post("/admin/lindy/user/", {"action": "delete_with_data",
                                                           "_selected_action": [cast.superuser.pk], "confirm": "yes"})
    assert User.objects.filter(pk=cast.superuser.pk).exists()
