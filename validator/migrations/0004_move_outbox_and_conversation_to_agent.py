"""The outbox and the conversation→task link belong to the agent app now. Their tables are
renamed in place (every row stays), then the models leave the validator's state; agent's
0001_initial takes them over without touching the database."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('validator', '0003_decision_execution_failed'),
    ]

    operations = [
        migrations.AlterModelTable(name='outboxentry', table='agent_outboxentry'),
        migrations.AlterModelTable(name='conversation', table='agent_opentask'),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='outboxentry'),
                migrations.DeleteModel(name='conversation'),
            ],
        ),
    ]
