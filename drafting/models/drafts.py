"""Drafts and the pairs that measure them.

A `Draft` is one inbound email the product looked at (one per Gmail message and user): skipped
(with why), or drafted in the user's Gmail thread. A drafted one keeps everything needed to
replay its model call with only the context document changed (`request`, whose system block
number `request["context_block"]` holds the context), the context revision it used and the
router's target, variant and recorded call.

A `DraftPair` is a draft and the email the user really sent in that thread, compared after
quotes and signatures are removed (drafting.similarity)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from lindy.jobs import LeasedJob


class Draft(LeasedJob):
    """Leased (lindy.jobs) while a worker drafts it: `heartbeat_at` is set from the claim until it
    lets go, `null` when nobody holds it."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting to be drafted"
        SKIPPED = "skipped", "No reply needed"
        SAVED = "saved", "Draft saved in Gmail"
        RECORDED = "recorded", "Draft recorded (Gmail actions are off)"
        FAILED = "failed", "Failed"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="email_drafts")
    team = models.ForeignKey("lindy.Team", on_delete=models.CASCADE, related_name="email_drafts")
    # The inbound email, as hydration stored it and as Gmail gave it when it was drafted.
    item = models.ForeignKey("hydration.Item", null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="email_drafts")
    gmail_message_id = models.CharField(max_length=255)
    gmail_thread_id = models.CharField(max_length=255, blank=True)
    rfc_message_id = models.CharField(max_length=998, blank=True, help_text="The Message-ID header (In-Reply-To).")
    references = models.TextField(blank=True, help_text="The References header of the reply.")
    inbound_from = models.CharField(max_length=320, blank=True)
    inbound_to = models.TextField(blank=True)
    inbound_subject = models.CharField(max_length=300, blank=True)
    inbound_body = models.TextField(blank=True)
    inbound_at = models.DateTimeField(null=True, blank=True)

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    skip_reason = models.CharField(max_length=300, blank=True, help_text="Why no draft: the rule or the model.")
    error = models.TextField(blank=True)

    # The draft.
    to = models.JSONField(default=list, blank=True)
    subject = models.CharField(max_length=300, blank=True)
    body = models.TextField(blank=True)
    gmail_draft_id = models.CharField(max_length=255, blank=True)

    # The context document used: the revision that last wrote drafting.md (None when the user has
    # none yet), its file version and a hash of the exact text the request held.
    context_revision = models.ForeignKey("memory.Revision", null=True, blank=True, on_delete=models.SET_NULL,
                                         related_name="email_drafts")
    context_version = models.PositiveIntegerField(null=True, blank=True)
    context_sha256 = models.CharField(max_length=64, blank=True)
    context_text = models.TextField(blank=True, help_text="The context document exactly as the request held it.")

    # The router's assignment and the recorded call.
    route = models.CharField(max_length=60, default="email.draft")
    target_name = models.CharField(max_length=100, blank=True)
    prompt_variant = models.CharField(max_length=60, blank=True)
    arm = models.CharField(max_length=20, blank=True)
    model_call = models.ForeignKey("router.ModelCall", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    triage_call = models.ForeignKey("router.ModelCall", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+", help_text="The model's needs-a-reply decision, when asked.")
    # The full replayable request: {"system": [blocks], "messages": [...], "max_tokens": n,
    # "context_block": i, "variant": name}; system[i] is the context document's block.
    request = models.JSONField(default=dict, blank=True)
    # The thread the request was built from (drafting.prompts.Thread as a dict).
    thread = models.JSONField(default=dict, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["user", "gmail_message_id"], name="drafting_one_draft_per_message"),
        ]
        indexes = [
            models.Index(fields=["user", "-created_at"], name="drafting_draft_user_created"),
            models.Index(fields=["team", "created_at"], name="drafting_draft_team_created"),
            models.Index(fields=["user", "gmail_thread_id"], name="drafting_draft_user_thread"),
            LeasedJob.sweep_index("drafting_draft_sweep"),
        ]

    def __str__(self):
        return f"draft {self.pk} ({self.status}) for {self.inbound_subject[:40]}"

    @property
    def drafted(self) -> bool:
        return self.status in (self.Status.SAVED, self.Status.RECORDED)


class DraftPair(models.Model):
    """A draft and what the user really sent in its thread."""

    draft = models.OneToOneField(Draft, on_delete=models.CASCADE, related_name="pair")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="draft_pairs")
    team = models.ForeignKey("lindy.Team", on_delete=models.CASCADE, related_name="draft_pairs")
    sent_item = models.ForeignKey("hydration.Item", null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="draft_pairs")
    sent_message_id = models.CharField(max_length=255)
    sent_body = models.TextField(blank=True, help_text="What the user sent, as Gmail gave it.")
    sent_at = models.DateTimeField(null=True, blank=True)
    draft_clean = models.TextField(blank=True, help_text="The draft without quotes and signature.")
    sent_clean = models.TextField(blank=True, help_text="The sent email without quotes and signature.")
    measure = models.CharField(max_length=30, blank=True, help_text="The similarity measure used.")
    similarity = models.FloatField(null=True, blank=True)
    scorable = models.BooleanField(default=True)
    unscorable_reason = models.CharField(max_length=200, blank=True)
    heavy_edit = models.BooleanField(default=False)
    meaningful = models.BooleanField(default=False, help_text="Different enough to learn from.")
    heavy_edit_threshold = models.FloatField(null=True, blank=True)
    meaningful_threshold = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["user", "created_at"], name="drafting_pair_user_created"),
            models.Index(fields=["team", "created_at"], name="drafting_pair_team_created"),
        ]

    def __str__(self):
        return f"pair of draft {self.draft_id}: {self.similarity}"


class SentMail(models.Model):
    """A message the user sent, looked at once for a draft to pair it with (so a sweep never
    asks Gmail about it again). `paired`: it answered a thread that had a draft."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey("hydration.Item", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    gmail_message_id = models.CharField(max_length=255)
    gmail_thread_id = models.CharField(max_length=255, blank=True)
    paired = models.BooleanField(default=False)
    note = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "gmail_message_id"], name="drafting_sent_once"),
        ]

    def __str__(self):
        return f"sent {self.gmail_message_id} ({'paired' if self.paired else 'not paired'})"
