"""Secrets at rest: OAuth and bot tokens (Gmail, Slack) are stored encrypted (Fernet: AES-128-CBC + HMAC-SHA256),
so a database dump or backup alone does not hand out access to anyone's mailbox or workspace.

The key is derived from SECRET_KEY with HKDF, one key per purpose. Keys derived from
SECRET_KEY_FALLBACKS still decrypt, so SECRET_KEY can be rotated the way Django documents
it; values are re-encrypted with the current key the next time they are saved.
"""

from __future__ import annotations

import base64
import logging

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.db import models

logger = logging.getLogger(__name__)

PURPOSE = b"lindy.hydration.oauth-tokens.v1"  # kept: changing it would orphan stored tokens


def _derive(secret: str, purpose: bytes) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose).derive(secret.encode("utf-8"))
    return Fernet(base64.urlsafe_b64encode(key))


def fernet(purpose: bytes = PURPOSE) -> MultiFernet:
    """Encrypts with SECRET_KEY's key; decrypts with it or any fallback's."""
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return MultiFernet([_derive(secret, purpose) for secret in secrets if secret])


def encrypt(plaintext: str, purpose: bytes = PURPOSE) -> str:
    return fernet(purpose).encrypt(plaintext.encode("utf-8")).decode("ascii")


def decrypt(token: str, purpose: bytes = PURPOSE) -> str:
    """The plaintext, or InvalidToken when no current or fallback key made `token`."""
    return fernet(purpose).decrypt(token.encode("ascii")).decode("utf-8")


def is_encrypted(value: str, purpose: bytes = PURPOSE) -> bool:
    try:
        decrypt(value, purpose)
    except (InvalidToken, UnicodeError, ValueError):
        return False
    return True


class EncryptedTextField(models.TextField):
    """A text column holding Fernet ciphertext; Python code only ever sees the plaintext.

    The empty string is stored as it is (it means "no token"). A value no known key can
    decrypt (SECRET_KEY changed without a fallback) reads as empty: the token is unusable,
    so the account shows as needing to be connected again instead of failing every page.
    """

    def from_db_value(self, value, expression, connection):
        if not value:
            return value
        try:
            return decrypt(value)
        except (InvalidToken, UnicodeError, ValueError):
            logger.warning("An encrypted %s could not be decrypted with SECRET_KEY or its fallbacks.", self.name)
            return ""

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if not value:
            return value
        return encrypt(value)


def encrypt_columns(app_label: str, model_name: str, fields: tuple[str, ...]):
    """A migration operation that encrypts the rows stored before a column became an
    EncryptedTextField (skipping values that are ciphertext already, so it can run twice);
    reversed, it writes the plaintext back. It works on raw column values, not through the
    field, which would encrypt or decrypt a second time."""
    from django.db import migrations

    def rewrite(apps, schema_editor, transform):
        connection = schema_editor.connection
        quote = connection.ops.quote_name
        table = quote(apps.get_model(app_label, model_name)._meta.db_table)
        columns = ", ".join(quote(name) for name in fields)
        assignments = ", ".join(f"{quote(name)} = %s" for name in fields)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT id, {columns} FROM {table}")
            for pk, *values in cursor.fetchall():
                new = [transform(value) if value else value for value in values]
                if new != list(values):
                    cursor.execute(f"UPDATE {table} SET {assignments} WHERE id = %s", [*new, pk])

    def forward(apps, schema_editor):
        rewrite(apps, schema_editor, lambda value: value if is_encrypted(value) else encrypt(value))

    def backward(apps, schema_editor):
        rewrite(apps, schema_editor, lambda value: decrypt(value) if is_encrypted(value) else value)

    return migrations.RunPython(forward, backward, elidable=False)
