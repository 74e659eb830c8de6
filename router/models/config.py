"""The router's configuration: providers and their budgets, targets (a model on a provider, with
its prices), routes and their prompt variants, users' model choices, and the router's audit actions."""

from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator
from django.db import models

from ..provider_keys import validate_provider_key_env

# The largest budget or concurrency a form accepts: far above any provider's limit, inside an integer column.
MAX_BUDGET = 1_000_000_000


class Provider(models.Model):
    """An inference host. OpenAI-compatible hosts have a base URL and an API key read from
    the environment variable named here: keys never live in the database."""

    class Kind(models.TextChoices):
        ANTHROPIC = "anthropic", "Anthropic"
        OPENAI_COMPATIBLE = "openai", "OpenAI-compatible"
        OFFLINE = "offline", "Offline rules"

    name = models.SlugField(max_length=60, unique=True, help_text="e.g. atlas, deepseek, anthropic")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    base_url = models.URLField(blank=True, help_text="e.g. https://api.example.com/v1 (chat completions host).")
    api_key_env = models.CharField(
        max_length=100, blank=True, validators=[validate_provider_key_env],
        help_text="Name of the environment variable that holds the API key: LINDY_PROVIDER_KEY_<NAME>.",
    )
    timeout_seconds = models.PositiveIntegerField(default=60)
    max_retries = models.PositiveSmallIntegerField(default=2)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class ProviderBudget(models.Model):
    """A provider's requests and tokens per minute, set by a superuser (router.budgets reads it at
    every call); without a row the ROUTER_PROVIDER_BUDGETS setting applies. 0: unlimited."""

    key = models.SlugField(max_length=60, unique=True,
                           help_text="A provider's name (the host of its targets), or \"default\" for the rest.")
    requests_per_minute = models.PositiveIntegerField(validators=[MaxValueValidator(MAX_BUDGET)])
    tokens_per_minute = models.PositiveIntegerField(validators=[MaxValueValidator(MAX_BUDGET)])
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]

    def __str__(self):
        return f"{self.key}: {self.requests_per_minute} requests, {self.tokens_per_minute} tokens a minute"


class Target(models.Model):
    """A model as served by one provider, with its prices. The same model on two
    providers is two targets: they score differently."""

    class Provider(models.TextChoices):
        ANTHROPIC = "anthropic", "Anthropic"
        OPENAI_COMPATIBLE = "openai", "OpenAI-compatible"
        OFFLINE = "offline", "Offline rules"

    name = models.SlugField(max_length=100, unique=True, help_text="e.g. claude-sonnet-4-5@anthropic")
    provider = models.CharField(max_length=20, choices=Provider.choices)
    model = models.CharField(max_length=120)
    host = models.ForeignKey(
        "router.Provider", null=True, blank=True, on_delete=models.PROTECT, related_name="targets",
        help_text="Where the model is served (base URL and key). Required for OpenAI-compatible targets.",
    )
    quantization = models.CharField(max_length=30, blank=True, help_text="As the provider declares it.")
    user_selectable = models.BooleanField(
        default=False, help_text="Users may pick this target explicitly in their profile."
    )
    accepts_images = models.BooleanField(
        default=False, db_default=False,
        help_text="The model reads image content blocks; on other targets the gateway sends a text note instead.",
    )
    # Prices in USD per million tokens.
    input_price = models.DecimalField(max_digits=10, decimal_places=4, default=Decimal("0"))
    output_price = models.DecimalField(max_digits=10, decimal_places=4, default=Decimal("0"))
    cache_write_price = models.DecimalField(max_digits=10, decimal_places=4, default=Decimal("0"))
    cache_read_price = models.DecimalField(max_digits=10, decimal_places=4, default=Decimal("0"))
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def cost(self, *, input_tokens=0, output_tokens=0, cache_write_tokens=0, cache_read_tokens=0) -> Decimal:
        total = (
            self.input_price * input_tokens
            + self.output_price * output_tokens
            + self.cache_write_price * cache_write_tokens
            + self.cache_read_price * cache_read_tokens
        )
        return (total / Decimal(1_000_000)).quantize(Decimal("0.000001"))


class Route(models.Model):
    """A named kind of model call (agent, validator, memory.summarize...) and its baseline target."""

    name = models.CharField(max_length=60, unique=True)
    description = models.CharField(max_length=300, blank=True)
    baseline = models.ForeignKey(Target, on_delete=models.PROTECT, related_name="baseline_routes")
    baseline_variant = models.CharField(max_length=60, default="default", help_text="Prompt variant of the baseline.")
    max_tokens = models.PositiveIntegerField(default=4096, help_text="Default output budget of a call.")
    max_concurrency = models.PositiveIntegerField(
        null=True, blank=True, validators=[MaxValueValidator(MAX_BUDGET)],
        help_text="Calls in flight at once across all workers (router.budgets). Empty: the "
                  "ROUTER_ROUTE_CONCURRENCY setting; 0: no limit.")
    # Set when a superuser put the baseline in place without passing offline evidence (never on
    # an evidence-only route, router.registry); cleared when a baseline is set on evidence.
    baseline_override_reason = models.TextField(blank=True)
    baseline_override_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    baseline_override_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class PromptVariant(models.Model):
    """A named version of a route's prompt. The app owning the route builds its prompt from
    the variant name the router chose (its prompts.py takes `variant=`)."""

    route = models.ForeignKey(Route, on_delete=models.CASCADE, related_name="variants")
    name = models.SlugField(max_length=60)
    description = models.CharField(max_length=300, blank=True)
    # A stored variant (an optimizer's candidate): its prompt text per component ({"system": "..."}),
    # which router.variants serves for this name. Empty: the owning app's code builds the prompt.
    components = models.JSONField(default=dict, blank=True)
    parent = models.CharField(max_length=60, blank=True, help_text="The variant this one was evolved from.")
    eval_score = models.FloatField(null=True, blank=True, help_text="Its score on the eval set when it was found.")
    parent_score = models.FloatField(null=True, blank=True, help_text="The parent's score on the same cases.")
    holdout_score = models.FloatField(
        null=True, blank=True, help_text="An optimizer's candidate: its score on the held-out slice gepa never saw.")
    parent_holdout_score = models.FloatField(null=True, blank=True,
                                             help_text="The parent's score on the same held-out slice.")
    diff = models.TextField(blank=True, help_text="Unified diff of its text against the parent's.")
    optimization = models.ForeignKey(
        "router.OptimizationRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="candidates",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["route__name", "name"]
        constraints = [models.UniqueConstraint(fields=["route", "name"], name="one_variant_name_per_route")]

    def __str__(self):
        return f"{self.route.name}:{self.name}"


class ModelChoice(models.Model):
    """A user's explicit choice of model, for one route or (route empty) for all routes.
    It wins over any rollout."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="model_choices")
    route = models.CharField(max_length=60, blank=True, help_text="Empty: every route.")
    target = models.ForeignKey(Target, on_delete=models.CASCADE, related_name="choices")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "route"], name="one_model_choice_per_user_route")]

    def __str__(self):
        return f"{self.user} -> {self.target} on {self.route or 'all routes'}"


class AuditAction(models.TextChoices):
    """The router's entries in the one audit log (lindy.AuditEntry): a change to its configuration
    (a route's baseline, a prompt variant, a target, a provider, a budget) or to a rollout."""

    ROUTE_BASELINE_SET = "route.baseline_set", "Route baseline changed"
    PROMPT_VARIANT_CREATED = "prompt_variant.created", "Prompt variant added"
    TARGET_CREATED = "target.created", "Target added"
    PROVIDER_CREATED = "provider.created", "Provider added"
    PROVIDER_UPDATED = "provider.updated", "Provider URL or key variable changed"
    PROVIDER_BUDGET_SET = "provider_budget.set", "Provider budget changed"
    ROUTE_CONCURRENCY_SET = "route.concurrency_set", "Route concurrency changed"
