
from django.db import migrations, models


def anthropic_targets_take_images(apps, schema_editor):
    # Every Claude model the product serves reads image blocks.
    apps.get_model("router", "Target").objects.filter(provider="anthropic").update(accepts_images=True)


class Migration(migrations.Migration):

    dependencies = [
        ('router', '0008_provider_budgets_and_route_concurrency'),
    ]

    operations = [
        migrations.AddField(
            model_name='target',
            name='accepts_images',
            field=models.BooleanField(default=False, db_default=False, help_text='The model reads image content blocks; on other targets the gateway sends a text note instead.'),
        ),
        migrations.RunPython(anthropic_targets_take_images, migrations.RunPython.noop),
    ]
