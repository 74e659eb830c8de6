"""Admin actions respect rank (issue 29, part 6).

A staff account with every permission on users, but not a superuser, once deleted the only
superuser with "delete with data". Now: deleting or demoting a superuser needs a superuser, the
last active superuser is never deleted or demoted, and every admin action that deletes data shows
the counts first and writes an audit entry (the admin's LogEntry).
"""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.admin.models import DELETION, LogEntry
from django.contrib.auth.models import Permission

from lindy.models import Team, User
from tests.conftest import client_for
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
USERS = "/admin/lindy/user/"


@pytest.fixture
def staff(cast):
    """Staff, not superuser, with every permission on users and teams."""
    user = UserFactory(email="staff@lindy.example", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="lindy",
                                                        content_type__model__in=["user", "team", "membership"]))
    return user


def _change_form(user: User, **changes) -> dict:
    form = {"email": user.email, "name": user.name, "is_active": "on" if user.is_active else "",
            "is_internal": "", "is_support": "", "is_staff": "on" if user.is_staff else "",
            "is_superuser": "on" if user.is_superuser else "",
            "last_login_0": "", "last_login_1": "", "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00"}
    form.update(changes)
    return {k: v for k, v in form.items() if v != ""} | {"date_joined_0": "2026-01-01", "date_joined_1": "00:00:00"}


def test_staff_cannot_delete_the_superuser_with_data(cast, staff):
    client = client_for(staff)
    form = {"action": "delete_with_data", "_selected_action": [cast.superuser.pk], "confirm": "yes"}
    response = client.post(USERS, form, follow=True)
    assert "Only a superuser can delete or demote a superuser" in response.content.decode()
    assert User.objects.filter(pk=cast.superuser.pk).exists()
    assert not LogEntry.objects.filter(action_flag=DELETION).exists()


def test_staff_cannot_use_the_single_delete_page_or_bulk_delete_on_a_superuser(cast, staff):
    client = client_for(staff)
    # Refused with a message, back to the user's page; the superuser stays.
    assert client.post(f"{USERS}{cast.superuser.pk}/delete/", {"post": "yes"}).status_code == 302
    assert User.objects.filter(pk=cast.superuser.pk).exists()
    assert "delete_selected" not in client.get(USERS).content.decode()
    client.post(USERS, {"action": "delete_selected", "_selected_action": [cast.superuser.pk], "post": "yes"})
    assert User.objects.filter(pk=cast.superuser.pk).exists()


def test_staff_cannot_demote_or_promote(cast, staff):
    client = client_for(staff)
    client.post(f"{USERS}{cast.superuser.pk}/change/", _change_form(cast.superuser, is_superuser=""))
    assert User.objects.get(pk=cast.superuser.pk).is_superuser
    # Nor make themselves (or anyone) a superuser: the rank fields are read-only for them.
    client.post(f"{USERS}{staff.pk}/change/", _change_form(staff, is_superuser="on"))
    assert not User.objects.get(pk=staff.pk).is_superuser
    page = client.get(f"{USERS}{staff.pk}/change/").content.decode()
    assert 'name="is_superuser"' not in page


def test_staff_may_still_delete_an_ordinary_user_with_counts_and_an_audit_entry(cast, staff):
    client = client_for(staff)
    form = {"action": "delete_with_data", "_selected_action": [cast.member.pk]}
    preview = client.post(USERS, form)
    assert preview.status_code == 200 and "rows" in preview.content.decode()  # the counts first
    assert User.objects.filter(pk=cast.member.pk).exists()
    client.post(USERS, {**form, "confirm": "yes"})
    assert not User.objects.filter(pk=cast.member.pk).exists()
    entry = LogEntry.objects.get(action_flag=DELETION, object_id=str(cast.member.pk))
    assert entry.user_id == staff.pk and "Deleted member@acme.example and" in entry.change_message


def test_the_last_superuser_is_never_deleted_or_demoted(cast):
    other = UserFactory(email="root2@lindy.example", is_superuser=True, is_staff=True)
    root = client_for(cast.superuser)
    # With a second superuser: a superuser may delete one.
    root.post(USERS, {"action": "delete_with_data", "_selected_action": [other.pk], "confirm": "yes"})
    assert not User.objects.filter(pk=other.pk).exists()
    # Now the last: another superuser-less path cannot remove it, nor can it be demoted.
    response = root.post(f"{USERS}{cast.superuser.pk}/change/", _change_form(cast.superuser, is_superuser=""),
                         follow=True)
    assert "no active superuser" in response.content.decode()
    assert User.objects.get(pk=cast.superuser.pk).is_superuser
    response = root.post(f"{USERS}{cast.superuser.pk}/delete/", {"post": "yes"}, follow=True)
    assert "no active superuser" in response.content.decode()
    assert User.objects.filter(pk=cast.superuser.pk).exists()


def test_a_superuser_may_demote_another_superuser(cast):
    other = UserFactory(email="root2@lindy.example", is_superuser=True, is_staff=True)
    client_for(cast.superuser).post(f"{USERS}{other.pk}/change/", _change_form(other, is_superuser=""))
    assert not User.objects.get(pk=other.pk).is_superuser


def test_every_deleting_admin_action_shows_counts_and_is_audited(cast):
    """Every action on every admin is Django's delete_selected (its confirmation page counts the
    objects, and it writes a LogEntry per object) or one reviewed here."""
    deleting = {"delete_selected", "delete_with_data"}
    # Reviewed: these delete nothing (django-celery-beat's schedule switches).
    not_deleting = {"enable_tasks", "disable_tasks", "toggle_tasks", "run_tasks"}
    reviewed = deleting | not_deleting
    for model, model_admin in admin.site._registry.items():
        names = {name for name in (model_admin.actions or []) if isinstance(name, str)}
        assert names <= reviewed, f"{model.__name__}: review {names - reviewed} (counts first, audit entry)"
    team = Team.objects.create(name="Doomed")
    root = client_for(cast.superuser)
    form = {"action": "delete_selected", "_selected_action": [team.pk]}
    confirm = root.post("/admin/lindy/team/", form).content.decode()
    assert "Summary" in confirm and "Teams: 1" in confirm
    root.post("/admin/lindy/team/", {**form, "post": "yes"})
    assert LogEntry.objects.filter(action_flag=DELETION, object_id=str(team.pk), user=cast.superuser).exists()
