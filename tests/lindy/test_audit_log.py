"""The one audit log (issue 27 part 6): every change to who may do what, or to what the assistant
may do or spend, is an AuditEntry with its actor, time, before and after; /audit/ shows a team
admin their team's entries and a superuser all of them, each field before → after."""

from __future__ import annotations

import pytest
from django.utils import timezone

from lindy import audit, services
from lindy.models import AuditEntry, Membership, User
from router import services as router_services
from tests.channels_app.factories import SlackChannelFactory
from tests.conftest import client_for
from tests.router.helpers import cheap_target, route

pytestmark = pytest.mark.django_db


def _role_change_in_admin(cast) -> Membership:
    """The superuser makes the member an admin on the Django admin's membership page."""
    membership = Membership.objects.get(team=cast.team, user=cast.member)
    response = client_for(cast.superuser).post(
        f"/admin/lindy/membership/{membership.pk}/change/",
        {"user": cast.member.pk, "team": cast.team.pk, "role": "admin"})
    assert response.status_code == 302, response.content[:500]
    return membership


def _memory_switch(cast):
    """The team admin lets a public Slack channel feed team memory."""
    channel = SlackChannelFactory(team=cast.team, name="sales")
    response = client_for(cast.admin).post(f"/channels/slack/{channel.pk}/team-memory/", {"enabled": "1"})
    assert response.status_code == 302
    return channel


def _rollout(cast):
    return router_services.rollout_start(route=route("agent"), candidate=cheap_target(), actor=cast.superuser,
                                         override_reason="No offline eval set for the agent yet.")


def test_audit_page_lists_a_role_change_a_memory_switch_and_a_rollout_with_their_actors(cast):
    started = timezone.now()
    membership = _role_change_in_admin(cast)
    channel = _memory_switch(cast)
    rollout = _rollout(cast)

    role = AuditEntry.objects.get(action="membership.changed")
    assert (role.actor, role.team_id, role.object_id) == (cast.superuser, cast.team.pk, str(membership.pk))
    assert role.before["role"] == "member" and role.after["role"] == "admin" and role.created_at >= started
    switch = AuditEntry.objects.get(action="slack_channel.team_memory_set")
    assert (switch.actor, switch.team_id, switch.before, switch.after) == (
        cast.admin, cast.team.pk, {"use_for_team_memory": False}, {"use_for_team_memory": True})
    started_entry = AuditEntry.objects.get(action="rollout.started")
    assert (started_entry.actor, started_entry.team_id, started_entry.object_id) == (cast.superuser, None,
                                                                                   str(rollout.pk))

    # The superuser sees all three, each with who did it and the fields before → after.
    page = client_for(cast.superuser).get("/audit/").content.decode()
    assert "Membership changed" in page and "Slack channel team memory set" in page and "Rollout started" in page
    assert "<code>role</code>: <span class=\"muted\">member</span> → admin" in page
    assert f"#{channel.name}" in page
    assert page.count(cast.superuser.email) >= 2 and cast.admin.email in page

    # The team's admin sees their team's entries: the role change and the switch, not the rollout.
    seen = client_for(cast.admin).get("/audit/").content.decode()
    assert "Membership changed" in seen and "Slack channel team memory set" in seen
    assert "Rollout started" not in seen
    assert "<code>use_for_team_memory</code>: <span class=\"muted\">no</span> → yes" in seen

    # Another team's admin sees none of them.
    other = client_for(cast.other_admin).get("/audit/").content.decode()
    assert "Membership changed" not in other and "Slack channel team memory set" not in other


@pytest.mark.parametrize("who", ["member", "support"])
def test_members_and_support_never_read_the_audit_log(cast, who):
    _memory_switch(cast)
    response = client_for(getattr(cast, who)).get("/audit/")
    assert response.status_code == 404


def test_support_staff_who_administer_a_team_never_read_the_audit_log(cast):
    services.membership_set(team=cast.team, user=cast.support, role=Membership.Role.ADMIN, actor=cast.superuser)
    _memory_switch(cast)
    assert client_for(cast.support).get("/audit/").status_code == 404


def test_membership_set_records_only_a_real_change(cast):
    before = AuditEntry.objects.count()
    services.membership_set(team=cast.team, user=cast.member, role=Membership.Role.MEMBER, actor=cast.admin)
    assert AuditEntry.objects.count() == before  # the same role: nothing changed, nothing recorded
    services.membership_set(team=cast.team, user=cast.member, role=Membership.Role.ADMIN, actor=cast.admin)
    entry = AuditEntry.objects.latest("pk")
    assert (entry.action, entry.actor, entry.before["role"], entry.after["role"]) == (
        "membership.role_set", cast.admin, "member", "admin")


def test_user_roles_changed_in_the_admin_are_recorded(cast):
    response = client_for(cast.superuser).post(f"/admin/lindy/user/{cast.member.pk}/change/", {
        "email": cast.member.email, "name": "", "is_internal": "on", "is_support": "on", "is_active": "on",
        "last_login_0": "", "last_login_1": "", "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00",
    })
    assert response.status_code == 302, response.content[:800]
    entry = AuditEntry.objects.get(action="user.roles_changed")
    assert entry.actor == cast.superuser
    assert [(c.field, c.before, c.after) for c in entry.changes] == [("is_support", False, True)]


def test_user_deletion_with_data_is_recorded(cast):
    member_pk, email = cast.member.pk, cast.member.email
    response = client_for(cast.superuser).post("/admin/lindy/user/", {
        "action": "delete_with_data", "_selected_action": [member_pk], "confirm": "yes"})
    assert response.status_code == 302
    assert not User.objects.filter(pk=member_pk).exists()
    entry = AuditEntry.objects.get(action="user.deleted")
    assert (entry.actor, entry.object_id, entry.object_repr, entry.after) == (cast.superuser, str(member_pk), email, None)
    assert entry.before["teams"] == {"Acme": "member"}


def test_an_opt_out_changed_by_staff_is_recorded(cast):
    from channels_app.models import OptOut

    opt_out = OptOut.objects.create(phone="+15555550101", channel="imessage", keyword="STOP",
                                    opted_out_at=timezone.now())
    response = client_for(cast.superuser).post(f"/admin/channels_app/optout/{opt_out.pk}/change/", {
        "phone": opt_out.phone, "channel": "imessage", "keyword": "STOP",
        "opted_out_at_0": "2026-01-01", "opted_out_at_1": "00:00:00",
        "opted_in_at_0": "2026-01-02", "opted_in_at_1": "00:00:00", "profile": ""})
    assert response.status_code == 302, response.content[:800]
    entry = AuditEntry.objects.get(action="opt_out.changed")
    assert entry.actor == cast.superuser and entry.team_id is None
    assert entry.before["opted_in_at"] is None and entry.after["opted_in_at"].startswith("2026-01-02")


def test_eval_candidate_acceptance_is_recorded(cast):
    from tests.validator.matrix import candidate
    from validator.eval_candidates import candidate_review
    from validator.models import EvalCandidate

    candidate_review(candidate=EvalCandidate.objects.get(pk=candidate(cast)), user=cast.admin, accept=True)
    entry = AuditEntry.objects.get(action="eval_candidate.accepted")
    assert (entry.actor, entry.team_id, entry.before, entry.after) == (
        cast.admin, cast.team.pk, {"status": "candidate"}, {"status": "accepted"})


def test_changes_render_each_field_before_and_after():
    entry = AuditEntry(action="x.changed", before={"role": "member", "team": "Acme"},
                       after={"role": "admin", "team": "Acme"})
    assert [(c.field, c.before, c.after) for c in audit.changes(entry)] == [("role", "member", "admin")]
    created = AuditEntry(action="x.added", before=None, after={"role": "admin"})
    assert [(c.field, c.before, c.after) for c in audit.changes(created)] == [("role", audit.MISSING, "admin")]


def test_the_audit_page_reads_in_a_bounded_number_of_queries(cast, django_assert_max_num_queries):
    for n in range(60):
        audit.record(actor=cast.admin if n % 2 else cast.superuser, action="membership.role_set",
                     object_type="membership", object_id=n, label=f"m{n}", team=cast.team,
                     before={"role": "member"}, after={"role": "admin"})
    client = client_for(cast.superuser)
    client.get("/audit/")  # warm the session and the navigation's lookups
    with django_assert_max_num_queries(8):
        response = client.get("/audit/?page=2")
    assert response.status_code == 200 and "Page 2 of 3" in response.content.decode()
