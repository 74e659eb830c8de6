"""What every model call cost (ModelCall), its online scores and the samples an online judge reads."""

from decimal import Decimal

from django.conf import settings
from django.db import models

from .config import Target
from .rollouts import Rollout


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
    rollout = models.ForeignKey(Rollout, null=True, blank=True, on_delete=models.SET_NULL, related_name="calls")
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
            # The guardrail aggregates: one rollout's arm within a recent window.
            models.Index(fields=["rollout", "arm", "created_at"]),
        ]

    def __str__(self):
        return f"{self.route} via {self.provider}/{self.model}"


class CallScore(models.Model):
    """An online evaluation of one call: a judge's score or an outcome signal another app
    reported (router.services.call_score_record). Values are 0..1."""

    call = models.ForeignKey(ModelCall, on_delete=models.CASCADE, related_name="scores")
    metric = models.CharField(max_length=60)
    value = models.FloatField()
    source = models.CharField(max_length=60, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["call", "metric"], name="one_score_per_call_metric")]
        indexes = [models.Index(fields=["metric", "created_at"])]

    def __str__(self):
        return f"{self.metric}={self.value} on call {self.call_id}"


class CallSample(models.Model):
    """The request and answer of a sampled live call, kept so an online judge can score it."""

    call = models.OneToOneField(ModelCall, on_delete=models.CASCADE, related_name="sample")
    request = models.JSONField()
    response = models.JSONField()
    judged_at = models.DateTimeField(null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"sample of call {self.call_id}"
