"""Gmail OAuth tokens move from plaintext to Fernet ciphertext (lindy/encryption.py).

The column type does not change; the data migration encrypts the rows stored before, and
skips values that are already ciphertext, so running it twice is harmless. Reversing it
writes the plaintext back."""

from django.db import migrations

import lindy.encryption

class Migration(migrations.Migration):

    dependencies = [
        ('hydration', '0001_initial'),
    ]

    operations = [
        migrations.AlterField(
            model_name='gmailaccount',
            name='access_token',
            field=lindy.encryption.EncryptedTextField(blank=True),
        ),
        migrations.AlterField(
            model_name='gmailaccount',
            name='refresh_token',
            field=lindy.encryption.EncryptedTextField(blank=True),
        ),
        lindy.encryption.encrypt_columns("hydration", "GmailAccount", ("access_token", "refresh_token")),
    ]
