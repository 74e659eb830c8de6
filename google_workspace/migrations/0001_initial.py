"""The Google connection's models move here from hydration with their rows: only Django's state
moves (the tables keep their names, db_table), so no row is copied and none is lost. Hydration's
0008 removes the models from its own state after this."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import lindy.encryption

MOVED = [("hydration", "gmailaccount", "google_workspace", "gmailaccount"),
         ("hydration", "gmailoauthstate", "google_workspace", "gmailoauthstate")]


def move_content_types(apps, schema_editor):
    """The content types (and so the admin permissions on them) follow the models."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for old_app, old_model, new_app, new_model in MOVED:
        old = ContentType.objects.using(db).filter(app_label=old_app, model=old_model).first()
        if old is None:
            continue
        if ContentType.objects.using(db).filter(app_label=new_app, model=new_model).exists():
            old.delete()
        else:
            old.app_label, old.model = new_app, new_model
            old.save(update_fields=["app_label", "model"])


def restore_content_types(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for old_app, old_model, new_app, new_model in MOVED:
        ContentType.objects.using(db).filter(app_label=new_app, model=new_model).update(
            app_label=old_app, model=old_model)


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("hydration", "0007_alter_item_author_kind"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="GmailAccount",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("email", models.EmailField(blank=True, max_length=254)),
                        ("access_token", lindy.encryption.EncryptedTextField(blank=True)),
                        ("refresh_token", lindy.encryption.EncryptedTextField(blank=True)),
                        ("token_expires_at", models.DateTimeField(blank=True, null=True)),
                        ("scopes", models.TextField(blank=True)),
                        ("act_in_gmail", models.BooleanField(default=False)),
                        ("act_in_calendar", models.BooleanField(default=False)),
                        ("status", models.CharField(choices=[("connected", "Connected"), ("disconnected", "Disconnected")], default="connected", max_length=20)),
                        ("status_detail", models.CharField(blank=True, max_length=500)),
                        ("connected_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        ("user", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name="gmail_account", to=settings.AUTH_USER_MODEL)),
                    ],
                    options={"db_table": "hydration_gmailaccount"},
                ),
                migrations.CreateModel(
                    name="GmailOAuthState",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("state", models.CharField(max_length=64, unique=True)),
                        ("purpose", models.CharField(default="read", max_length=20)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("consumed_at", models.DateTimeField(blank=True, null=True)),
                        ("user", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to=settings.AUTH_USER_MODEL)),
                    ],
                    options={"db_table": "hydration_gmailoauthstate"},
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_types, restore_content_types),
    ]
