"""The agent's own records: the outbox of executed actions, and which task each conversation feeds."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from lindy import tool_registry


class OutboxEntry(models.Model):
    """Every executed action is written here: what ran, through which adapter, and how it went.
    Actions with no live integration (payments, file shares; Gmail and Calendar until the user
    lets the assistant act there) end here as `recorded`.

    A live Gmail or Calendar action is written `pending` with its execution key BEFORE the
    provider is called (agent/tools/execution.py): a retry after an unknown outcome finds the
    row and asks the provider before doing it again, so the action happens exactly once."""

    class Status(models.TextChoices):
        RECORDED = "recorded", "Recorded (no live integration)"
        PENDING = "pending", "Not confirmed yet"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    team = models.ForeignKey("lindy.Team", on_delete=models.CASCADE, related_name="outbox_entries")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="outbox_entries")
    task = models.ForeignKey("lindy.AgentTask", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    decision = models.ForeignKey(
        "validator.Decision", on_delete=models.SET_NULL, null=True, blank=True, related_name="outbox"
    )
    tool = models.CharField(max_length=100)
    arguments = models.JSONField(default=dict)
    adapter = models.CharField(max_length=40)
    status = models.CharField(max_length=10, choices=Status.choices)
    response = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    # Live actions only: one row per execution key, the provider's id for what it did, and a link to it.
    execution_key = models.CharField(max_length=200, null=True, blank=True, unique=True)
    provider_id = models.CharField(max_length=200, blank=True)
    link = models.URLField(max_length=1000, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name_plural = "outbox entries"
        indexes = [models.Index(fields=["user", "created_at"])]

    def __str__(self):
        return f"{self.tool} via {self.adapter} ({self.status})"

    @property
    def description(self) -> str:
        return tool_registry.describe(self.tool, self.arguments)

    @property
    def argument_rows(self) -> list:
        return tool_registry.argument_rows(self.arguments)


class OpenTask(models.Model):
    """The task a user's conversation on a channel currently feeds. (Not channels_app's
    Conversation, which holds that channel's debounce window and typing state.)"""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    channel = models.CharField(max_length=40)
    conversation_ref = models.CharField(max_length=200)
    task = models.ForeignKey("lindy.AgentTask", on_delete=models.CASCADE, related_name="+")
    last_inbound_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "channel", "conversation_ref"], name="one_open_task_per_conversation")
        ]

    def __str__(self):
        return f"{self.user} on {self.channel}:{self.conversation_ref}"
