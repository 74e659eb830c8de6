"""GmailAccount and GmailOAuthState now belong to google_workspace (its 0001 takes them over with
their tables): they leave hydration's state only, the tables and rows stay."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("hydration", "0007_alter_item_author_kind"),
        ("google_workspace", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="GmailAccount"),
                migrations.DeleteModel(name="GmailOAuthState"),
            ],
            database_operations=[],
        ),
    ]
