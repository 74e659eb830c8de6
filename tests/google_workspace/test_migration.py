"""Upgrading a database from the schema before the google_workspace app (hydration 0007) keeps
the Google connection's rows: the models move, the tables and their rows stay."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("hydration", "0007_alter_item_author_kind"), ("google_workspace", None)]
AFTER = [("google_workspace", "0001_initial"), ("hydration", "0008_google_connection_moves_out")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state([t for t in targets if t[1] is not None], at_end=True).apps


@pytest.mark.django_db(transaction=True)
def test_a_connected_account_and_its_oauth_state_survive_the_move():
    old = _migrate(BEFORE)
    User = old.get_model("lindy", "User")
    ContentType = old.get_model("contenttypes", "ContentType")
    ContentType.objects.get_or_create(app_label="hydration", model="gmailaccount")
    user = User.objects.create(email="mover@example.test")
    account = old.get_model("hydration", "GmailAccount").objects.create(
        user=user, email="mover@gmail.test", access_token="ya29.kept", refresh_token="1//kept", scopes="openid",
        act_in_calendar=True)
    state = old.get_model("hydration", "GmailOAuthState").objects.create(state="s" * 40, user=user,
                                                                         purpose="calendar_actions")

    new = _migrate(AFTER)
    moved = new.get_model("google_workspace", "GmailAccount").objects.get(pk=account.pk)
    assert (moved.user_id, moved.email, moved.access_token, moved.refresh_token, moved.act_in_calendar) == (
        user.pk, "mover@gmail.test", "ya29.kept", "1//kept", True)
    assert new.get_model("google_workspace", "GmailOAuthState").objects.get(pk=state.pk).purpose == "calendar_actions"
    cts = new.get_model("contenttypes", "ContentType").objects
    assert cts.filter(app_label="google_workspace", model="gmailaccount").exists()
    assert not cts.filter(app_label="hydration", model="gmailaccount").exists()

    back = _migrate(BEFORE)  # and back: hydration owns them again, rows and all
    assert back.get_model("hydration", "GmailAccount").objects.get(pk=account.pk).email == "mover@gmail.test"
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
