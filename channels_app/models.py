"""Channels: Slack channels the assistant was added to; texting (iMessage with SMS fallback),
the sending-number pool, inbound debounce state and per-number daily traffic."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from lindy.encryption import EncryptedTextField
from lindy.jobs import LeasedJob
from lindy.models import Team, User

# --- Slack -----------------------------------------------------------------------------------

class SlackInstallation(models.Model):
    """One OAuth install of the Slack app into a workspace (slack_sdk's Installation, in Django)."""

    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="slack_installations")
    client_id = models.CharField(max_length=64)
    app_id = models.CharField(max_length=32, blank=True)
    enterprise_id = models.CharField(max_length=32, blank=True)
    enterprise_name = models.CharField(max_length=200, blank=True)
    slack_team_id = models.CharField(max_length=32, blank=True)
    slack_team_name = models.CharField(max_length=200, blank=True)
    # Tokens are encrypted at rest (lindy/encryption.py): a database dump hands out no workspace.
    bot_token = EncryptedTextField(blank=True)
    bot_refresh_token = EncryptedTextField(blank=True)
    bot_token_expires_at = models.DateTimeField(null=True, blank=True)
    bot_id = models.CharField(max_length=32, blank=True)
    bot_user_id = models.CharField(max_length=32, blank=True)
    bot_scopes = models.TextField(blank=True)
    user_id = models.CharField(max_length=32)
    user_token = EncryptedTextField(blank=True)
    user_scopes = models.TextField(blank=True)
    incoming_webhook_url = models.TextField(blank=True)
    incoming_webhook_channel = models.CharField(max_length=200, blank=True)
    incoming_webhook_channel_id = models.CharField(max_length=32, blank=True)
    incoming_webhook_configuration_url = models.TextField(blank=True)
    is_enterprise_install = models.BooleanField(default=False)
    token_type = models.CharField(max_length=32, blank=True)
    installed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["client_id", "enterprise_id", "slack_team_id", "installed_at"])]

    def __str__(self):
        return f"{self.slack_team_name or self.slack_team_id} ({self.team or 'no Lindy team'})"


class SlackOAuthState(models.Model):
    """A one-time OAuth `state`, tied to the Lindy team whose admin started the install."""

    state = models.CharField(max_length=64, unique=True)
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE)
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    expire_at = models.DateTimeField()
    consumed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"OAuth state for {self.team_id}"


class SlackChannel(models.Model):
    """A channel the bot was explicitly added to. The only channels the assistant ever reads."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="slack_channels")
    installation = models.ForeignKey(SlackInstallation, null=True, blank=True, on_delete=models.SET_NULL)
    slack_team_id = models.CharField(max_length=32)
    channel_id = models.CharField(max_length=32)
    name = models.CharField(max_length=200, blank=True)
    is_private = models.BooleanField(default=False)
    active = models.BooleanField(default=True)
    use_for_team_memory = models.BooleanField(
        default=False,
        help_text="Public channels only: on from when the assistant is added; team admins can switch it off.",
    )
    inviter_slack_id = models.CharField(max_length=32, blank=True)
    joined_at = models.DateTimeField(default=timezone.now)
    left_at = models.DateTimeField(null=True, blank=True)
    sharers: models.ManyToManyField[User, SlackChannelShare] = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="SlackChannelShare", related_name="slack_channels"
    )

    class Meta:
        ordering = ["name", "channel_id"]
        constraints = [
            models.UniqueConstraint(fields=["slack_team_id", "channel_id"], name="slack_channel_unique"),
        ]
        indexes = [models.Index(fields=["team", "active", "is_private"])]

    def __str__(self):
        return f"#{self.name or self.channel_id}"


class SlackChannelShare(models.Model):
    """A Lindy user who is in a private channel with the assistant; they decide whether it feeds
    their own memory."""

    channel = models.ForeignKey(SlackChannel, on_delete=models.CASCADE, related_name="shares")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="slack_channel_shares")
    slack_user_id = models.CharField(max_length=32, blank=True)
    use_for_memory = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["channel", "user"], name="slack_share_unique")]
        indexes = [models.Index(fields=["user", "use_for_memory"])]

    def __str__(self):
        return f"{self.user_id} in {self.channel_id}"


class SlackEvent(models.Model):
    """An Events API delivery, stored before anything is done with it: the endpoint answers Slack
    at once (it wants a 200 within 3 seconds) and a Celery task processes it, once, by event id,
    however often Slack retries (X-Slack-Retry-Num)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        PROCESSING = "processing", "Processing"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    event_id = models.CharField(max_length=64, unique=True)
    slack_team_id = models.CharField(max_length=32, blank=True)
    event_type = models.CharField(max_length=60, blank=True)
    body = models.TextField(help_text="The signed JSON, replayed through slack-bolt by the task; cleared once done.")
    retries = models.PositiveIntegerField(default=0, help_text="Slack's retry deliveries of it (X-Slack-Retry-Num).")
    retry_reason = models.CharField(max_length=60, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    received_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "received_at"])]

    def __str__(self):
        return f"{self.event_type} {self.event_id} ({self.status})"


# --- Texting -----------------------------------------------------------------------------------

class Channel(models.TextChoices):
    IMESSAGE = "imessage", "iMessage"
    SMS = "sms", "SMS"


class SendingNumber(models.Model):
    """A line in the pool. iMessage lines go through the managed API; SMS lines through Twilio."""

    phone = models.CharField(max_length=20, unique=True, help_text="E.164, e.g. +14155550100")
    label = models.CharField(max_length=80, blank=True)
    kind = models.CharField(max_length=10, choices=Channel.choices, default=Channel.IMESSAGE)
    daily_cap = models.PositiveIntegerField(default=500, help_text="Messages this line may send per day.")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["kind", "phone"]

    def __str__(self):
        return f"{self.label or self.phone} ({self.kind})"

    @property
    def line_name(self) -> str:
        """What support calls the line: "Line 5 · CHI" (channels_app.lines)."""
        from .lines import line_name

        return line_name(label=self.label, phone=self.phone, kind=self.kind)


class TextingProfile(models.Model):
    """A user's phone, the pool number they keep, and what we know about their handset."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="texting_profile")
    phone = models.CharField(max_length=20, unique=True)
    number = models.ForeignKey(SendingNumber, null=True, blank=True, on_delete=models.SET_NULL, related_name="profiles",
                               help_text="The iMessage line the user keeps (sticky).")
    sms_number = models.ForeignKey(SendingNumber, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="sms_profiles", help_text="The SMS line the user texted, if any.")
    first_texted_at = models.DateTimeField(null=True, blank=True, help_text="Users text first; before this, nothing is sent.")
    imessage_capable = models.BooleanField(null=True, blank=True)
    capability_checked_at = models.DateTimeField(null=True, blank=True)
    chat_id = models.CharField(max_length=64, blank=True, help_text="The managed API's one-to-one chat.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.user} {self.phone}"


class Conversation(models.Model):
    """Debounce state of one user's one-to-one thread. The window's deadline lives here, so a
    worker restart loses nothing: any worker can see what is due."""

    profile = models.OneToOneField(TextingProfile, on_delete=models.CASCADE, related_name="conversation")
    channel = models.CharField(max_length=10, choices=Channel.choices, default=Channel.IMESSAGE)
    deadline = models.DateTimeField(null=True, blank=True, db_index=True)
    version = models.PositiveIntegerField(default=0)
    typing_since = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"conversation {self.pk} ({self.channel})"

    def conversation_ref(self) -> str:
        if self.channel == Channel.IMESSAGE and self.profile.chat_id:
            return f"imessage:{self.profile.chat_id}"
        return f"sms:{self.profile.phone}"


class InboundBundle(LeasedJob):
    """Messages handed to the agent together. Claimed before dispatch so no message is answered twice.
    Its lease (lindy.jobs): `heartbeat_at` is when its messages were claimed into it, then beaten
    by a thread while the agent has it (a killed worker stops beating: the sweep takes it over once
    the beat is stale); `attempts` counts hand-overs."""

    class Status(models.TextChoices):
        CLAIMED = "claimed", "Claimed"
        DISPATCHING = "dispatching", "Dispatching"
        DISPATCHED = "dispatched", "Dispatched"
        FAILED = "failed", "Failed"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="bundles")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.CLAIMED, db_index=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    agent_task_id = models.BigIntegerField(null=True, blank=True)
    handed_over_at = models.DateTimeField(
        null=True, blank=True, help_text="When the agent was handed this bundle: from then on it is never re-run."
    )
    task_event_mark = models.BigIntegerField(
        null=True, blank=True, help_text="The last agent task event id before the hand-over (what the agent did after)."
    )
    error = models.TextField(blank=True)

    class Meta:
        indexes = [LeasedJob.sweep_index("channels_bundle_sweep")]

    def __str__(self):
        return f"bundle {self.pk} ({self.status})"


class InboundMessage(models.Model):
    """Stored the moment it arrives, before anything else happens to it."""

    channel = models.CharField(max_length=10, choices=Channel.choices)
    provider_id = models.CharField(max_length=100, help_text="Webhook event id or Twilio MessageSid.")
    from_phone = models.CharField(max_length=20)
    number = models.ForeignKey(SendingNumber, null=True, blank=True, on_delete=models.SET_NULL, related_name="inbound")
    profile = models.ForeignKey(TextingProfile, null=True, blank=True, on_delete=models.SET_NULL, related_name="inbound")
    conversation = models.ForeignKey(Conversation, null=True, blank=True, on_delete=models.SET_NULL, related_name="messages")
    bundle = models.ForeignKey(InboundBundle, null=True, blank=True, on_delete=models.SET_NULL, related_name="messages")
    text = models.TextField(blank=True)
    reaction = models.JSONField(null=True, blank=True)
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["received_at", "id"]
        constraints = [models.UniqueConstraint(fields=["channel", "provider_id"], name="inbound_dedupe")]
        indexes = [models.Index(fields=["conversation", "bundle"])]

    def __str__(self):
        return f"{self.channel} {self.provider_id}"


class InboundAttachment(models.Model):
    """An image or file the user sent. The provider's URL expires; our copy is kept."""

    message = models.ForeignKey(InboundMessage, on_delete=models.CASCADE, related_name="attachments")
    provider_id = models.CharField(max_length=100, blank=True)
    filename = models.CharField(max_length=255, blank=True)
    mime_type = models.CharField(max_length=100, blank=True)
    size_bytes = models.PositiveIntegerField(default=0)
    source_url = models.TextField()
    stored_path = models.CharField(max_length=500, blank=True)
    stored_at = models.DateTimeField(null=True, blank=True)
    # Voice memos (audio/*): what the router's channels.transcribe route heard, or why it could not.
    transcript = models.TextField(blank=True)
    transcription_error = models.TextField(blank=True)
    transcribed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return self.filename or f"attachment {self.pk}"

    @property
    def is_audio(self) -> bool:
        return self.mime_type.lower().startswith("audio/")

    @property
    def is_image(self) -> bool:
        return self.mime_type.lower().startswith("image/")

    def as_reference(self) -> dict:
        reference = {
            "id": self.pk, "filename": self.filename, "mime_type": self.mime_type,
            "stored_path": self.stored_path, "stored": bool(self.stored_at),
        }
        if self.is_audio:
            reference["kind"] = "voice_memo"
            reference["transcript"] = self.transcript
            reference["transcription_error"] = self.transcription_error
        elif self.is_image:
            reference["kind"] = "photo"
        return reference



class OutboundMessage(models.Model):
    """Every attempt to send to a user, including refusals, cap hits and fallbacks."""

    class Status(models.TextChoices):
        SENT = "sent", "Sent"
        REFUSED = "refused", "Refused"
        FAILED = "failed", "Failed"

    class Refusal(models.TextChoices):
        NONE = "", "None"
        NEVER_TEXTED = "never_texted", "The user never texted in"
        OPTED_OUT = "opted_out", "The user opted out of this channel"
        LINE_CRITICAL = "line_critical", "The line is over its critical ratio (unprompted send)"

    class Fallback(models.TextChoices):
        NONE = "", "None"
        CAP = "cap", "iMessage number at its daily cap"
        NOT_IMESSAGE = "not_imessage", "Recipient cannot receive iMessage"
        IMESSAGE_FAILED = "imessage_failed", "iMessage send failed"
        REQUESTED = "requested", "SMS asked for"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="outbound_messages")
    profile = models.ForeignKey(TextingProfile, null=True, blank=True, on_delete=models.SET_NULL)
    number = models.ForeignKey(SendingNumber, null=True, blank=True, on_delete=models.SET_NULL, related_name="outbound",
                               help_text="The line that sent it (or the iMessage line it fell back from).")
    channel = models.CharField(max_length=10, choices=Channel.choices, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices)
    fallback_reason = models.CharField(max_length=20, choices=Fallback.choices, blank=True)
    refusal = models.CharField(max_length=20, choices=Refusal.choices, blank=True,
                               help_text="Why the send was refused (status refused).")
    consent_notice = models.BooleanField(
        default=False, help_text="The one confirmation of an opt-out or opt-in: sent whatever the opt-out state."
    )
    provider_id = models.CharField(max_length=100, blank=True)
    body = models.TextField()
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    def __str__(self):
        return f"{self.channel or '-'} to {self.user_id}: {self.status}"


class NumberDay(models.Model):
    """Traffic of one line on one day: what the ratio dashboard and the alert job read."""

    number = models.ForeignKey(SendingNumber, on_delete=models.CASCADE, related_name="days")
    day = models.DateField()
    sent = models.PositiveIntegerField(default=0)
    received = models.PositiveIntegerField(default=0)
    fallbacks = models.PositiveIntegerField(default=0, help_text="Sends that left this line's path for SMS.")
    capped = models.PositiveIntegerField(default=0, help_text="Sends refused because the line was at its cap.")

    class Meta:
        ordering = ["day"]
        constraints = [models.UniqueConstraint(fields=["number", "day"], name="number_day_unique")]
        indexes = [models.Index(fields=["day"])]

    def __str__(self):
        return f"{self.number_id} {self.day}"

    @property
    def ratio(self) -> float:
        return ratio_of(self.sent, self.received)


def ratio_of(sent: int, received: int) -> float:
    """Sent per received. With nothing received, every send counts fully (a one-way blast)."""
    return round(sent / received, 2) if received else float(sent)


class RatioAlert(models.Model):
    """One per line and day: raised at a warning and escalated to critical (never lowered),
    delivered to support by email and Slack once per level, acknowledged by support."""

    class Level(models.TextChoices):
        WARN = "warn", "Warning"
        CRITICAL = "critical", "Critical"

    number = models.ForeignKey(SendingNumber, on_delete=models.CASCADE, related_name="alerts")
    day = models.DateField()
    level = models.CharField(max_length=10, choices=Level.choices)
    ratio = models.FloatField()
    sent = models.PositiveIntegerField()
    received = models.PositiveIntegerField()
    threshold = models.FloatField()
    created_at = models.DateTimeField(default=timezone.now)
    escalated_at = models.DateTimeField(null=True, blank=True)
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                        related_name="+")
    acknowledge_note = models.CharField(max_length=500, blank=True, help_text="Support's note when acknowledging.")
    # The level each way of telling people has delivered: a level is told once on each.
    emailed_level = models.CharField(max_length=10, choices=Level.choices, blank=True)
    slacked_level = models.CharField(max_length=10, choices=Level.choices, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["number", "day"], name="one_alert_per_line_day")]

    def __str__(self):
        return f"{self.level} {self.number_id} {self.day}"


class WebhookEvent(models.Model):
    """Every signed webhook we accepted, by the provider's event id: a retry is processed once."""

    source = models.CharField(max_length=10)
    event_id = models.CharField(max_length=100)
    event_type = models.CharField(max_length=60, blank=True)
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "event_id"], name="webhook_event_once")]

    def __str__(self):
        return f"{self.source}:{self.event_id}"


class OptOut(models.Model):
    """A phone that texted STOP (or STOPALL, UNSUBSCRIBE...) to one of our channels: nothing is
    sent to it on that channel, agent replies included, until it texts START. One row per episode,
    so support sees who opted out and when, and when they came back."""

    phone = models.CharField(max_length=20)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    profile = models.ForeignKey(TextingProfile, null=True, blank=True, on_delete=models.SET_NULL, related_name="opt_outs")
    number = models.ForeignKey(SendingNumber, null=True, blank=True, on_delete=models.SET_NULL, related_name="opt_outs",
                               help_text="The line the keyword was texted to: the confirmations go from it.")
    keyword = models.CharField(max_length=20)
    opted_out_at = models.DateTimeField(default=timezone.now)
    opted_in_at = models.DateTimeField(null=True, blank=True)
    opt_in_keyword = models.CharField(max_length=20, blank=True)
    # The one confirmation each way: claimed before it is sent, so a retried task never sends two.
    out_confirmed_at = models.DateTimeField(null=True, blank=True)
    in_confirmed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-opted_out_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["phone", "channel"], condition=models.Q(opted_in_at__isnull=True),
                                    name="one_open_opt_out_per_channel"),
        ]
        indexes = [models.Index(fields=["opted_out_at"])]

    def __str__(self):
        return f"{self.phone} opted out of {self.channel}"

    @property
    def active(self) -> bool:
        return self.opted_in_at is None
