"""Takes over the tables validator 0004 renamed: state only, no rows move or change. Content
types (and with them admin permissions and log entries) follow the models."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

MOVED = [("validator", "outboxentry", "agent", "outboxentry"), ("validator", "conversation", "agent", "opentask")]


def move_content_types(apps, schema_editor):
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
        ('contenttypes', '0002_remove_content_type_name'),
        ('lindy', '0001_initial'),
        ('validator', '0004_move_outbox_and_conversation_to_agent'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='OutboxEntry',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('tool', models.CharField(max_length=100)),
                        ('arguments', models.JSONField(default=dict)),
                        ('adapter', models.CharField(max_length=40)),
                        ('status', models.CharField(choices=[('recorded', 'Recorded (no live integration)'), ('sent', 'Sent'), ('failed', 'Failed')], max_length=10)),
                        ('response', models.JSONField(blank=True, null=True)),
                        ('error', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                        ('decision', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='outbox', to='validator.decision')),
                        ('task', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='lindy.agenttask')),
                        ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='outbox_entries', to='lindy.team')),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='outbox_entries', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'verbose_name_plural': 'outbox entries',
                        'ordering': ['-created_at', '-pk'],
                        'indexes': [models.Index(fields=['user', 'created_at'], name='validator_o_user_id_b084f0_idx')],
                    },
                ),
                migrations.CreateModel(
                    name='OpenTask',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('channel', models.CharField(max_length=40)),
                        ('conversation_ref', models.CharField(max_length=200)),
                        ('last_inbound_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('task', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='lindy.agenttask')),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'constraints': [models.UniqueConstraint(fields=('user', 'channel', 'conversation_ref'), name='one_open_task_per_conversation')],
                    },
                ),
            ],
        ),
        migrations.RunPython(move_content_types, restore_content_types),
    ]
