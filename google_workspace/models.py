"""The user's Google connection. The tables keep the names they had under hydration (the models
moved here with their rows: migrations 0001 here and hydration 0008 only move the state)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from lindy.encryption import EncryptedTextField


class GmailAccount(models.Model):
    """A user's one Google connection (Gmail, and Calendar when they turn it on). The tokens stay
    on the server, encrypted at rest (see encryption.py): no page or API response includes them.
    Reading mail for memory is the base grant; acting is opt-in, with scopes asked for then."""

    class Status(models.TextChoices):
        CONNECTED = "connected", "Connected"
        DISCONNECTED = "disconnected", "Disconnected"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="gmail_account")
    email = models.EmailField(blank=True)
    access_token = EncryptedTextField(blank=True)
    refresh_token = EncryptedTextField(blank=True)
    token_expires_at = models.DateTimeField(null=True, blank=True)
    scopes = models.TextField(blank=True)
    # The user turned on "let the assistant act in Gmail" / calendar actions (and Google granted them).
    act_in_gmail = models.BooleanField(default=False)
    act_in_calendar = models.BooleanField(default=False)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.CONNECTED)
    status_detail = models.CharField(max_length=500, blank=True)
    connected_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "hydration_gmailaccount"

    def __str__(self):
        return f"Gmail of {self.user_id} ({self.status})"


class GmailOAuthState(models.Model):
    """A one-time OAuth `state` for the user who started connecting."""

    state = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # What the user asked to turn on: "read", "gmail_actions" or "calendar_actions" (gmail.PURPOSES).
    purpose = models.CharField(max_length=20, default="read")
    created_at = models.DateTimeField(auto_now_add=True)
    consumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "hydration_gmailoauthstate"

    def __str__(self):
        return f"Gmail OAuth state for {self.user_id}"
