"""Gmail OAuth tokens move from plaintext to Fernet ciphertext (hydration/encryption.py).

The column type does not change; the data migration encrypts the rows stored before, and
skips values that are already ciphertext, so running it twice is harmless. Reversing it
writes the plaintext back."""

from django.db import migrations

import hydration.encryption

FIELDS = ("access_token", "refresh_token")


def _rewrite(apps, schema_editor, transform):
    connection = schema_editor.connection
    table = connection.ops.quote_name(apps.get_model("hydration", "GmailAccount")._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(name) for name in FIELDS)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, {columns} FROM {table}")
        rows = cursor.fetchall()
        for pk, *values in rows:
            new = [transform(value) if value else value for value in values]
            if new == list(values):
                continue
            assignments = ", ".join(f"{connection.ops.quote_name(name)} = %s" for name in FIELDS)
            cursor.execute(f"UPDATE {table} SET {assignments} WHERE id = %s", [*new, pk])


def encrypt_tokens(apps, schema_editor):
    enc = hydration.encryption
    _rewrite(apps, schema_editor, lambda value: value if enc.is_encrypted(value) else enc.encrypt(value))


def decrypt_tokens(apps, schema_editor):
    enc = hydration.encryption
    _rewrite(apps, schema_editor, lambda value: enc.decrypt(value) if enc.is_encrypted(value) else value)


class Migration(migrations.Migration):

    dependencies = [
        ('hydration', '0001_initial'),
    ]

    operations = [
        migrations.AlterField(
            model_name='gmailaccount',
            name='access_token',
            field=hydration.encryption.EncryptedTextField(blank=True),
        ),
        migrations.AlterField(
            model_name='gmailaccount',
            name='refresh_token',
            field=hydration.encryption.EncryptedTextField(blank=True),
        ),
        migrations.RunPython(encrypt_tokens, decrypt_tokens, elidable=False),
    ]
