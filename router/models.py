"""Which model serves each route, and what every call cost."""

from decimal import Decimal

from django.conf import settings
from django.db import models


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
    quantization = models.CharField(max_length=30, blank=True, help_text="As the provider declares it.")
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
    max_tokens = models.PositiveIntegerField(default=4096, help_text="Default output budget of a call.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class ModelCall(models.Model):
    """One model call, as the gateway made it."""

    route = models.CharField(max_length=60, db_index=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    team = models.ForeignKey("lindy.Team", null=True, blank=True, on_delete=models.SET_NULL)
    target = models.ForeignKey(Target, null=True, blank=True, on_delete=models.SET_NULL)
    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=120)
    prompt_variant = models.CharField(max_length=60, blank=True, default="default")
    arm = models.CharField(max_length=20, blank=True, default="baseline")
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal("0"))
    latency_ms = models.PositiveIntegerField(default=0)
    stop_reason = models.CharField(max_length=30, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["route", "created_at"]),
            models.Index(fields=["team", "created_at"]),
            models.Index(fields=["user", "created_at"]),
        ]

    def __str__(self):
        return f"{self.route} via {self.provider}/{self.model}"
