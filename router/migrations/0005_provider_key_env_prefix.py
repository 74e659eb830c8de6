# Provider keys are read only from LINDY_PROVIDER_KEY_<NAME> variables (router.provider_keys).

import re

from django.db import migrations, models

import router.provider_keys

PREFIX = "LINDY_PROVIDER_KEY_"


def rename_key_variables(apps, schema_editor):
    """Rows written before the rule: an OpenAI-compatible provider's variable becomes its
    conventional LINDY_PROVIDER_KEY_<NAME> (the README says to rename it in the environment);
    the Anthropic provider reads ANTHROPIC_API_KEY from settings, so its row names none."""
    Provider = apps.get_model("router", "Provider")
    for provider in Provider.objects.all():
        if provider.kind != "openai":
            new = ""
        elif re.fullmatch(rf"{PREFIX}[A-Z0-9_]+", provider.api_key_env or "") or not provider.api_key_env:
            continue
        else:
            new = PREFIX + re.sub(r"[^A-Z0-9_]", "_", provider.name.upper())
        if new != provider.api_key_env:
            Provider.objects.filter(pk=provider.pk).update(api_key_env=new)


class Migration(migrations.Migration):

    dependencies = [
        ('router', '0004_audit_event'),
    ]

    operations = [
        migrations.AlterField(
            model_name='provider',
            name='api_key_env',
            field=models.CharField(blank=True, help_text='Name of the environment variable that holds the API key: LINDY_PROVIDER_KEY_<NAME>.', max_length=100, validators=[router.provider_keys.validate_provider_key_env]),
        ),
        migrations.RunPython(rename_key_variables, migrations.RunPython.noop, elidable=False),
    ]
