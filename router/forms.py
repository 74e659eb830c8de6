from typing import cast

from django import forms

from .models import PromptVariant, Provider, Route, Target, default_stages
from .services.config import provider_check, target_check
from .services.rollouts import parse_stages, stages_text


class TargetForm(forms.ModelForm):
    """Parses and checks a new target; router.services.target_create writes it."""

    class Meta:
        model = Target
        fields = ["name", "provider", "host", "model", "quantization", "input_price", "output_price",
                  "cache_write_price", "cache_read_price", "user_selectable", "accepts_images"]

    def clean(self):
        data = super().clean()
        if data.get("provider"):
            target_check(provider=data["provider"], host=data.get("host"))
        return data


class ProviderForm(forms.ModelForm):
    """Parses and checks a new provider; router.services.provider_create writes it."""

    base_url = forms.URLField(required=False, assume_scheme="https",
                              help_text="e.g. https://api.example.com/v1 (chat completions host).")
    class Meta:
        model = Provider
        fields = ["name", "kind", "base_url", "api_key_env", "timeout_seconds", "max_retries"]
        help_texts = {"api_key_env": "The key itself stays in the environment, never in the database."}

    def clean(self):
        data = super().clean()
        provider_check(kind=data.get("kind", ""), base_url=data.get("base_url", ""),
                       api_key_env=data.get("api_key_env", ""))
        return data


def _variant_choices(route: Route):
    return [(v, v) for v in PromptVariant.objects.filter(route=route).values_list("name", flat=True)]


class BaselineForm(forms.Form):
    baseline = forms.ModelChoiceField(queryset=Target.objects.all())
    baseline_variant = forms.ChoiceField()

    def __init__(self, *args, route: Route, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["baseline_variant"]).choices = _variant_choices(route)


class VariantForm(forms.Form):
    name = forms.SlugField(max_length=60)
    description = forms.CharField(max_length=300, required=False)


class EvalRunForm(forms.Form):
    target = forms.ModelChoiceField(queryset=Target.objects.all())
    variant = forms.ChoiceField()

    def __init__(self, *args, route: Route, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["variant"]).choices = _variant_choices(route)


class RolloutForm(forms.Form):
    candidate = forms.ModelChoiceField(queryset=Target.objects.all())
    candidate_variant = forms.ChoiceField()
    stages = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}), initial=stages_text(default_stages()),
        help_text="One stage per line: percent, minimum hours, minimum scored calls.",
    )
    include_internal = forms.BooleanField(required=False, initial=True, label="Internal users first")
    score_margin = forms.FloatField(min_value=0, max_value=1, initial=0.05)
    min_scored_calls = forms.IntegerField(min_value=1, max_value=1_000_000, initial=30)
    retention_days = forms.IntegerField(min_value=1, max_value=90, initial=7)
    retention_margin = forms.FloatField(min_value=0, max_value=1, initial=0.10)

    def __init__(self, *args, route: Route, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["candidate_variant"]).choices = _variant_choices(route)

    def clean_stages(self):
        return parse_stages(self.cleaned_data["stages"])


class ChoiceForm(forms.Form):
    route = forms.ChoiceField(required=False)
    target = forms.ModelChoiceField(queryset=Target.objects.filter(user_selectable=True), required=False,
                                    empty_label="Automatic (let Lindy choose)")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["route"].choices = [("", "All routes")] + [
            (name, name) for name in Route.objects.order_by("name").values_list("name", flat=True)
        ]


class StagesForm(forms.Form):
    stages = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}),
                             help_text="One stage per line: percent, minimum hours, minimum scored calls.")

    def clean_stages(self):
        return parse_stages(self.cleaned_data["stages"])
