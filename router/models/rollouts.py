"""Rollouts: a route's users moved stage by stage from its baseline to a candidate, and every change
of one with its reason."""

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q

from .config import Route, Target


def default_stages() -> list[dict]:
    return [
        {"percent": 1, "min_hours": 24, "min_samples": 30},
        {"percent": 5, "min_hours": 24, "min_samples": 50},
        {"percent": 10, "min_hours": 48, "min_samples": 100},
        {"percent": 25, "min_hours": 48, "min_samples": 150},
        {"percent": 50, "min_hours": 72, "min_samples": 200},
        {"percent": 100, "min_hours": 0, "min_samples": 0},
    ]


class Rollout(models.Model):
    """Moves a percentage of a route's users from its baseline to a candidate (target, variant).

    Internal users get the candidate first; others by a sticky bucket of (salt, user id) in
    10,000 buckets, so raising the percentage keeps everyone already on the candidate."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"
        ROLLED_BACK = "rolled_back", "Rolled back"
        COMPLETED = "completed", "Completed"

    ACTIVE = (Status.RUNNING, Status.PAUSED)

    route = models.ForeignKey(Route, on_delete=models.CASCADE, related_name="rollouts")
    baseline = models.ForeignKey(Target, on_delete=models.PROTECT, related_name="+")
    baseline_variant = models.CharField(max_length=60, default="default")
    candidate = models.ForeignKey(Target, on_delete=models.PROTECT, related_name="candidate_rollouts")
    candidate_variant = models.CharField(max_length=60, default="default")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RUNNING, db_index=True)
    salt = models.CharField(max_length=40, help_text="Hashed with the user id to pick the user's bucket.")
    stages = models.JSONField(default=default_stages)
    stage_index = models.PositiveSmallIntegerField(default=0)
    percent = models.DecimalField(max_digits=5, decimal_places=2, default=Decimal("0"))
    stage_started_at = models.DateTimeField(null=True, blank=True)
    include_internal = models.BooleanField(default=True, help_text="Internal users get the candidate from the start.")
    # Guardrails.
    score_margin = models.FloatField(
        default=0.05, help_text="How much worse (0..1 score) the candidate may be than baseline before rolling back."
    )
    min_scored_calls = models.PositiveIntegerField(
        default=30, help_text="Scored calls each arm needs before a score comparison counts."
    )
    error_margin = models.FloatField(default=0.05, help_text="Extra error rate the candidate may have.")
    retention_days = models.PositiveSmallIntegerField(default=7)
    retention_margin = models.FloatField(default=0.10)
    min_retention_users = models.PositiveIntegerField(default=20)
    alpha = models.FloatField(
        default=0.05, help_text="Chance the guardrails roll back a candidate no worse than its margins, however "
        "often they look (router.sequential).",
    )
    latency_margin = models.FloatField(default=0.25, help_text="How much slower (share of baseline) the candidate may be.")
    cost_margin = models.FloatField(default=0.5, help_text="How much dearer per call (share of baseline) it may be.")
    # Offline evidence: the eval runs that let it start, or the superuser's override and why.
    offline_evidence = models.JSONField(default=dict, blank=True)
    override_reason = models.TextField(blank=True, help_text="Why it started without passing offline evidence.")
    override_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
    )
    last_check = models.JSONField(default=dict, blank=True)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["route"], condition=Q(status__in=["running", "paused"]), name="one_active_rollout_per_route"
            )
        ]

    def __str__(self):
        return f"{self.route.name}: {self.candidate.name}:{self.candidate_variant} at {self.percent}%"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def stage(self) -> dict:
        return self.stages[self.stage_index] if self.stages else {"percent": 0, "min_hours": 0, "min_samples": 0}

    @property
    def next_stage(self) -> dict | None:
        return self.stages[self.stage_index + 1] if self.stage_index + 1 < len(self.stages) else None


class RolloutEvent(models.Model):
    """A change to a rollout, with its reason: every change of percentage is one."""

    class Kind(models.TextChoices):
        STARTED = "started", "Started"
        RAMPED = "ramped", "Ramped"
        PAUSED = "paused", "Paused"
        RESUMED = "resumed", "Resumed"
        ROLLED_BACK = "rolled_back", "Rolled back"
        COMPLETED = "completed", "Completed"
        STAGES_EDITED = "stages_edited", "Stages edited"

    rollout = models.ForeignKey(Rollout, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    from_percent = models.DecimalField(max_digits=5, decimal_places=2)
    to_percent = models.DecimalField(max_digits=5, decimal_places=2)
    reason = models.TextField()
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        help_text="Empty when the guardrail job made the change.",
    )
    evidence = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self):
        return f"{self.kind} {self.from_percent}% -> {self.to_percent}%"
