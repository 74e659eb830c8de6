from collections.abc import Sequence
from decimal import Decimal
from typing import cast

from django import forms

from .models import MAX_BUDGET, PromptVariant, Provider, Rollout, Route, Target, default_stages
from .registry import label_of, user_facing_routes
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


class ProviderEditForm(forms.ModelForm):
    """Parses a change of a provider's URL, key variable or limits; router.services.provider_update writes it."""

    base_url = forms.URLField(required=False, assume_scheme="https",
                              help_text="e.g. https://api.example.com/v1 (chat completions host).")

    class Meta:
        model = Provider
        fields = ["base_url", "api_key_env", "timeout_seconds", "max_retries"]
        help_texts = {"api_key_env": "The key is sent only to the host LINDY_PROVIDER_URL_<NAME> names beside it."}

    def clean(self):
        data = super().clean()
        provider_check(kind=self.instance.kind, base_url=data.get("base_url", ""),
                       api_key_env=data.get("api_key_env", ""))
        return data


def _variant_choices(route: Route, variants: Sequence[str] | None = None):
    names = variants if variants is not None else PromptVariant.objects.filter(route=route).values_list("name", flat=True)
    return [(v, v) for v in names]


def _offer(field: forms.Field, targets: Sequence[Target] | None) -> None:
    """Fill a target menu from targets the page already loaded. Left alone, each menu runs its own
    query through a server-side cursor (three round trips on PostgreSQL), and the route page has four."""
    if targets is not None:
        choice = cast(forms.ModelChoiceField, field)
        choice.choices = [("", choice.empty_label), *((t.pk, choice.label_from_instance(t)) for t in targets)]


class BaselineForm(forms.Form):
    baseline = forms.ModelChoiceField(queryset=Target.objects.all())
    baseline_variant = forms.ChoiceField()
    override_reason = forms.CharField(
        required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}),
        label="Set without a passing offline eval because…",
        help_text="Superusers only, never on the validator's route: your reason is kept and shown on this page.",
    )

    def __init__(self, *args, route: Route, variants: Sequence[str] | None = None,
                 targets: Sequence[Target] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["baseline_variant"]).choices = _variant_choices(route, variants)
        _offer(self.fields["baseline"], targets)


class VariantForm(forms.Form):
    name = forms.SlugField(max_length=60)
    description = forms.CharField(max_length=300, required=False)


class EvalRunForm(forms.Form):
    target = forms.ModelChoiceField(queryset=Target.objects.all())
    variant = forms.ChoiceField()

    def __init__(self, *args, route: Route, variants: Sequence[str] | None = None,
                 targets: Sequence[Target] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["variant"]).choices = _variant_choices(route, variants)
        _offer(self.fields["target"], targets)


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
    alpha = forms.FloatField(min_value=0.001, max_value=0.2, initial=0.05, required=False,
                             help_text="Chance the guardrails roll back a candidate that is no worse, however often "
                             "they look.")
    override_reason = forms.CharField(
        required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}),
        label="Start without offline evidence because…",
        help_text="Only when the evidence above is missing: your reason is kept on the rollout for good.",
    )

    def __init__(self, *args, route: Route, variants: Sequence[str] | None = None,
                 targets: Sequence[Target] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["candidate_variant"]).choices = _variant_choices(route, variants)
        _offer(self.fields["candidate"], targets)

    def clean_stages(self):
        return parse_stages(self.cleaned_data["stages"])

    def clean_alpha(self):
        alpha = self.cleaned_data["alpha"]
        return Rollout._meta.get_field("alpha").get_default() if alpha is None else alpha


class ChoiceForm(forms.Form):
    route = forms.ChoiceField(required=False)
    target = forms.ModelChoiceField(queryset=Target.objects.filter(user_selectable=True), required=False,
                                    empty_label="Automatic (let Lindy choose)")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Only the routes people choose models for: the product's plumbing is not theirs to route.
        self.fields["route"].choices = [("", "All routes")] + [(name, label_of(name)) for name in user_facing_routes()]


class StagesForm(forms.Form):
    stages = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}),
                             help_text="One stage per line: percent, minimum hours, minimum scored calls.")

    def clean_stages(self):
        return parse_stages(self.cleaned_data["stages"])


class BudgetForm(forms.Form):
    """A provider's requests and tokens per minute, or back to the settings' default."""

    key = forms.SlugField(max_length=60)
    requests_per_minute = forms.IntegerField(min_value=0, max_value=MAX_BUDGET, required=False)
    tokens_per_minute = forms.IntegerField(min_value=0, max_value=MAX_BUDGET, required=False)
    use_default = forms.BooleanField(required=False)

    def clean(self):
        data = super().clean()
        if not data.get("use_default"):
            for name in ("requests_per_minute", "tokens_per_minute"):
                if data.get(name) is None and name not in self.errors:
                    self.add_error(name, "Required, unless you go back to the default.")
        return data


class ConcurrencyForm(forms.Form):
    """Calls a route may have in flight at once, or back to the settings' default."""

    max_concurrency = forms.IntegerField(min_value=0, max_value=MAX_BUDGET, required=False)
    use_default = forms.BooleanField(required=False)

    def clean(self):
        data = super().clean()
        if not data.get("use_default") and data.get("max_concurrency") is None and "max_concurrency" not in self.errors:
            self.add_error("max_concurrency", "Required, unless you go back to the default.")
        return data


class OptimizationForm(forms.Form):
    """A prompt optimization's target and budget, stated before it starts."""

    target = forms.ModelChoiceField(queryset=Target.objects.all(), help_text="The candidates are evaluated on it.")
    parent_variant = forms.ChoiceField(label="Parent variant")
    budget_usd = forms.DecimalField(min_value=Decimal("0.0001"), max_value=Decimal("1000"), decimal_places=4,
                                    label="Budget (USD)", initial=Decimal("5"))
    budget_calls = forms.IntegerField(min_value=1, max_value=100_000, initial=2_000, label="Budget (model calls)")
    budget_tokens = forms.IntegerField(min_value=1, max_value=500_000_000, initial=5_000_000, label="Budget (tokens)")

    def __init__(self, *args, route: Route, variants: Sequence[str] | None = None,
                 targets: Sequence[Target] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        field = cast(forms.ChoiceField, self.fields["parent_variant"])
        field.choices = _variant_choices(route, variants)
        _offer(self.fields["target"], targets)
        field.initial = route.baseline_variant
