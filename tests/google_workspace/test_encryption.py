"""Gmail OAuth tokens are encrypted at rest: the database holds Fernet ciphertext, code sees
plaintext, SECRET_KEY can be rotated, and the migration encrypts rows stored before it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings
from django.utils import timezone

from google_workspace import oauth as gmail_service
from google_workspace.errors import NotConnected
from google_workspace.models import GmailAccount
from lindy import encryption

pytestmark = pytest.mark.django_db


def _raw(account_id: int) -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT access_token, refresh_token FROM hydration_gmailaccount WHERE id = %s", [account_id])
        return cursor.fetchone()


def _account(user, **fields) -> GmailAccount:
    defaults = {"email": "umar@gmail.test", "access_token": "ya29.secret-access", "refresh_token": "1//secret-refresh",
                "token_expires_at": timezone.now() + timedelta(hours=1)}
    return GmailAccount.objects.create(user=user, **{**defaults, **fields})


def test_tokens_are_ciphertext_in_the_database_and_plaintext_in_code(cast):
    account = _account(cast.member)
    access, refresh = _raw(account.pk)
    assert "secret" not in access and "secret" not in refresh
    assert access.startswith("gAAAAA") and refresh.startswith("gAAAAA")  # Fernet version byte
    assert encryption.decrypt(access) == "ya29.secret-access"
    fresh = GmailAccount.objects.get(pk=account.pk)
    assert (fresh.access_token, fresh.refresh_token) == ("ya29.secret-access", "1//secret-refresh")
    # An update through a queryset is encrypted too; "no token" stays an empty string.
    GmailAccount.objects.filter(pk=account.pk).update(access_token="ya29.other", refresh_token="")
    access, refresh = _raw(account.pk)
    assert "ya29" not in access and refresh == ""
    assert GmailAccount.objects.get(pk=account.pk).access_token == "ya29.other"


def test_the_same_token_encrypts_differently_each_time(cast):
    assert encryption.encrypt("ya29.same") != encryption.encrypt("ya29.same")


def test_secret_key_rotation_keeps_tokens_readable_through_fallbacks(cast, settings):
    old_key = settings.SECRET_KEY
    account = _account(cast.member)
    with override_settings(SECRET_KEY="a-new-secret-key-for-rotation", SECRET_KEY_FALLBACKS=[old_key]):
        assert GmailAccount.objects.get(pk=account.pk).access_token == "ya29.secret-access"
        account.save()  # re-encrypted with the new key
        access, _ = _raw(account.pk)
        assert encryption.decrypt(access) == "ya29.secret-access"
    with override_settings(SECRET_KEY="a-new-secret-key-for-rotation", SECRET_KEY_FALLBACKS=[]):
        assert GmailAccount.objects.get(pk=account.pk).access_token == "ya29.secret-access"


def test_a_token_no_key_can_read_means_connect_again_not_a_crash(cast):
    account = _account(cast.member, token_expires_at=timezone.now() - timedelta(minutes=5))
    with override_settings(SECRET_KEY="an-unrelated-key", SECRET_KEY_FALLBACKS=[]):
        unreadable = GmailAccount.objects.get(pk=account.pk)
        assert (unreadable.access_token, unreadable.refresh_token) == ("", "")
        with pytest.raises(NotConnected):
            gmail_service.access_token(unreadable)
    account.refresh_from_db()
    assert account.status == GmailAccount.Status.DISCONNECTED and "reconnect Gmail" in account.status_detail


@pytest.mark.django_db(transaction=True)
def test_migration_encrypts_existing_plaintext_tokens_and_reverses(cast):
    account = _account(cast.member)
    before, after = [("hydration", "0001_initial")], [("hydration", "0002_gmail_tokens_encrypted")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    assert _raw(account.pk) == ("ya29.secret-access", "1//secret-refresh")  # reversed: plaintext again
    with connection.cursor() as cursor:  # a row written by the old code: plaintext
        cursor.execute("UPDATE hydration_gmailaccount SET access_token = %s WHERE id = %s",
                       ["ya29.stored-before", account.pk])
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    access, refresh = _raw(account.pk)
    assert "ya29" not in access and "secret" not in refresh
    # Only the token columns: the model has fields later migrations add.
    fresh = GmailAccount.objects.only("access_token", "refresh_token").get(pk=account.pk)
    assert (fresh.access_token, fresh.refresh_token) == ("ya29.stored-before", "1//secret-refresh")
    # Running the data step again leaves ciphertext alone (no double encryption).
    from django.apps import apps

    # (The model lives in google_workspace now; the step runs on the same table.)
    step = encryption.encrypt_columns("google_workspace", "GmailAccount", ("access_token", "refresh_token"))
    with connection.schema_editor() as editor:
        step.code(apps, editor)
    assert GmailAccount.objects.only("access_token").get(pk=account.pk).access_token == "ya29.stored-before"
    # Back to the latest schema (later hydration migrations), for the tests that follow.
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
