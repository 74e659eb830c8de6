"""The validator's decisions: what it was asked to judge, its verdict, and how the user resolved it."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from lindy import tool_registry as registry


class Decision(models.Model):
    """One action the validator looked at (or let through as exempt), and what became of it."""

    class Status(models.TextChoices):
        EXEMPT = "exempt", "Exempt (not validated)"
        ALLOWED = "allowed", "Allowed"
        EXECUTED = "executed", "Allowed and executed"
        EXECUTION_FAILED = "execution_failed", "Allowed, but running it failed"
        BLOCKED = "blocked", "Blocked"
        AUTHORIZED = "authorized", "Authorized by the user"
        DISMISSED = "dismissed", "Dismissed"
        SUGGESTION_FOLLOWED = "suggestion_followed", "Suggestion sent back to the task"

    class Confidence(models.TextChoices):
        HIGH = "high", "High"
        MEDIUM = "medium", "Medium"
        LOW = "low", "Low"

    RESOLVED = (Status.AUTHORIZED, Status.DISMISSED, Status.SUGGESTION_FOLLOWED)

    team = models.ForeignKey("lindy.Team", on_delete=models.CASCADE, related_name="validator_decisions")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="validator_decisions",
        help_text="The user the action was for: the only person who may authorize it.",
    )
    task = models.ForeignKey(
        "lindy.AgentTask", on_delete=models.CASCADE, null=True, blank=True, related_name="validator_decisions"
    )
    # For checks sent through the API with their own history instead of a task.
    history = models.JSONField(default=list, blank=True)
    event_seq = models.PositiveIntegerField(null=True, blank=True, help_text="Last task event the validator saw.")
    tool_call_id = models.CharField(max_length=100, blank=True)
    tool = models.CharField(max_length=100, db_index=True)
    effect = models.CharField(max_length=20, choices=[(k, v) for k, v in registry.EFFECT_LABELS.items()])
    arguments = models.JSONField(default=dict)
    justification = models.TextField(blank=True)
    evidence = models.JSONField(default=dict, blank=True)

    approved = models.BooleanField(default=False)
    reasoning = models.TextField(blank=True)
    confidence = models.CharField(max_length=10, choices=Confidence.choices, blank=True)
    suggested_next_step = models.TextField(blank=True, null=True)
    validator_failure = models.BooleanField(
        default=False, help_text="The validator could not give a verdict (model error, timeout, malformed output): blocked."
    )
    failure_reason = models.TextField(blank=True)

    model_call_id = models.BigIntegerField(null=True, blank=True)
    provider = models.CharField(max_length=40, blank=True)
    model = models.CharField(max_length=100, blank=True)
    prompt_variant = models.CharField(max_length=60, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)

    status = models.CharField(max_length=24, choices=Status.choices)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    executed_at = models.DateTimeField(null=True, blank=True)
    execution_result = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]
        # The lists read one user's decisions newest first (all of them, or one status), so each
        # index ends in the list's order (-created_at, -id) and PostgreSQL stops after one page
        # instead of sorting every row the user has. The team filter the permission rules add is
        # checked on those few rows. The admins' statistics read (team, created_at) and the columns they
        # count, all from the index.
        indexes = [
            models.Index(fields=["user", "status", "-created_at", "-id"], name="decision_user_status_newest"),
            models.Index(fields=["user", "-created_at", "-id"], name="decision_user_newest"),
            models.Index(fields=["team", "created_at"], include=["status", "tool", "approved", "validator_failure"],
                         name="decision_team_period"),
        ]

    def __str__(self):
        return f"{self.tool} for {self.user} ({self.status})"

    @property
    def description(self) -> str:
        return registry.describe(self.tool, self.arguments)

    @property
    def argument_rows(self) -> list:
        return registry.argument_rows(self.arguments)

    @property
    def effect_label(self) -> str:
        return registry.EFFECT_LABELS.get(self.effect, self.effect)

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.BLOCKED
