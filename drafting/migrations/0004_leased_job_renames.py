# The drafting jobs move onto lindy.jobs.LeasedJob: the claim fields keep their rows under the
# shared names (a draft's and an initialization's claim time is their heartbeat; the claiming task
# execution is the lease's task id).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('drafting', '0003_learner'),
    ]

    operations = [
        migrations.RenameField(model_name='draft', old_name='claimed_at', new_name='heartbeat_at'),
        migrations.RenameField(model_name='contextinit', old_name='claimed_at', new_name='heartbeat_at'),
        migrations.RenameField(model_name='contextinit', old_name='claimed_by', new_name='lease_task_id'),
    ]
