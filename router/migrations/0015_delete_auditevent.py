from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("router", "0014_audit_events_to_one_log"),
    ]

    operations = [migrations.DeleteModel(name="AuditEvent")]
