"""The learner's records, one module of the drafting app's models (drafting/models/).

- `HistoryBlob`: the claim check of initialization. The fetch task stores the user's answered
  threads (sanitized and formatted) as one row and hands its id to the compose task.
- `ContextInit`: one initialization of a user's context document, through its two tasks.
- `LearnerRun`: one run of the learner for a user (by the cadence, a command or a simulation).
- `Proposal`: an edit to the context document (or an initial document), with its evidence: the
  pairs it was proposed from, the diff, the comparisons and the sign test. Kept whatever the
  outcome.
- `Comparison`: one held-out pair (or historical thread) replayed with the current and the
  proposed context and judged twice with the positions swapped.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from lindy.jobs import LeasedJob


class HistoryBlob(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    team = models.ForeignKey("lindy.Team", on_delete=models.CASCADE, related_name="+")
    months = models.PositiveSmallIntegerField(default=3)
    # [{"thread": drafting.prompts.Thread as a dict, "sent": the user's reply (quotes and signature
    #   removed), "sent_at": ISO time, "thread_id": Gmail thread id}], oldest first.
    threads = models.JSONField(default=list)
    thread_count = models.PositiveIntegerField(default=0)
    char_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "drafting"

    def __str__(self):
        return f"history of {self.user_id}: {self.thread_count} threads"


class ContextInit(LeasedJob):
    """Leased (lindy.jobs) by the task execution doing its current step: `lease_task_id` is
    empty while nobody holds it; `attempts` counts the claims of both steps."""

    class Status(models.TextChoices):
        FETCHING = "fetching", "Fetching the user's mail"
        COMPOSING = "composing", "Composing and testing the context document"
        ACCEPTED = "accepted", "Accepted and written"
        REFUSED = "refused", "Refused by the gate"
        WAITING = "waiting", "Not enough evidence to decide"
        FAILED = "failed", "Failed"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    team = models.ForeignKey("lindy.Team", on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.FETCHING)
    months = models.PositiveSmallIntegerField(default=3)
    blob = models.ForeignKey(HistoryBlob, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    proposal = models.ForeignKey("drafting.Proposal", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "drafting"
        ordering = ["-created_at", "-pk"]
        indexes = [LeasedJob.sweep_index("drafting_cinit_sweep")]

    def __str__(self):
        return f"initialization {self.pk} ({self.status})"


class LearnerRun(LeasedJob):
    STATUS_FIELD = "outcome"

    class Trigger(models.TextChoices):
        CADENCE = "cadence", "Enough new pairs (cadence)"
        FLOOR = "floor", "Daily floor"
        COMMAND = "command", "Command"
        SIMULATION = "simulation", "Simulation"

    class Outcome(models.TextChoices):
        RUNNING = "running", "Running"
        ACCEPTED = "accepted", "Edit accepted"
        REJECTED = "rejected", "Edit rejected"
        WAITING = "waiting", "Waiting for more pairs"
        NOTHING = "nothing", "Nothing to learn from"
        NO_EDIT = "no_edit", "No edit proposed"
        FAILED = "failed", "Failed"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    team = models.ForeignKey("lindy.Team", on_delete=models.CASCADE, related_name="+")
    trigger = models.CharField(max_length=12, choices=Trigger.choices)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.RUNNING)
    message = models.TextField(blank=True)
    new_pairs = models.PositiveIntegerField(default=0, help_text="Meaningful pairs not yet learned from.")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "drafting"
        ordering = ["-started_at", "-pk"]
        indexes = [models.Index(fields=["user", "-started_at"], name="drafting_lrun_user_started"),
                   LeasedJob.sweep_index("drafting_lrun_sweep", "outcome")]

    def __str__(self):
        return f"learner run {self.pk} ({self.outcome})"


class Proposal(models.Model):
    class Kind(models.TextChoices):
        EDIT = "edit", "Edit"
        INIT = "init", "Initial document"

    class Status(models.TextChoices):
        PENDING = "pending", "Being tested"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"
        WAITING = "waiting", "Waiting for more pairs"
        STALE = "stale", "Not written: the document changed meanwhile"
        NO_EDIT = "no_edit", "No edit proposed"
        FAILED = "failed", "Failed"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    team = models.ForeignKey("lindy.Team", on_delete=models.CASCADE, related_name="context_proposals")
    run = models.ForeignKey(LearnerRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="proposals")
    kind = models.CharField(max_length=5, choices=Kind.choices, default=Kind.EDIT)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    base_context = models.TextField(blank=True)
    proposed_context = models.TextField(blank=True)
    diff = models.TextField(blank=True, help_text="Unified diff, base to proposed.")
    summary = models.TextField(blank=True, help_text="What the proposer says it learned.")
    proposed_from = models.ManyToManyField("drafting.DraftPair", blank=True, related_name="proposals_from")
    wins = models.PositiveIntegerField(default=0)
    losses = models.PositiveIntegerField(default=0)
    ties = models.PositiveIntegerField(default=0)
    p_value = models.FloatField(null=True, blank=True)
    decision_reason = models.TextField(blank=True)
    propose_call = models.ForeignKey("router.ModelCall", null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    proposer_target = models.CharField(max_length=100, blank=True)
    proposer_variant = models.CharField(max_length=60, blank=True)
    written_revision = models.ForeignKey("memory.Revision", null=True, blank=True, on_delete=models.SET_NULL,
                                         related_name="+")
    created_at = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "drafting"
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["user", "-created_at"], name="drafting_prop_user_created"),
            models.Index(fields=["team", "-created_at"], name="drafting_prop_team_created"),
        ]

    def __str__(self):
        return f"proposal {self.pk} ({self.status})"

    @property
    def decided(self) -> int:
        return self.wins + self.losses


class Comparison(models.Model):
    class Outcome(models.TextChoices):
        WIN = "win", "Proposed draft closer"
        LOSS = "loss", "Current draft closer"
        TIE = "tie", "Tie"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="comparisons")
    pair = models.ForeignKey("drafting.DraftPair", null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="comparisons")
    history_index = models.PositiveIntegerField(null=True, blank=True, help_text="Initialization: the held-out "
                                                "thread's place in the history blob.")
    sent = models.TextField(blank=True, help_text="What the user sent (cleaned).")
    old_draft = models.TextField(blank=True, help_text="Replayed with the current context.")
    new_draft = models.TextField(blank=True, help_text="Replayed with the proposed context.")
    old_similarity = models.FloatField(null=True, blank=True)
    new_similarity = models.FloatField(null=True, blank=True)
    identical = models.BooleanField(default=False, help_text="Both replays gave the same text: a tie, no judge.")
    # First ask: current draft in position A, proposed in B. Second ask: swapped.
    first_vote = models.CharField(max_length=3, blank=True)
    second_vote = models.CharField(max_length=3, blank=True)
    swap_agrees = models.BooleanField(null=True)
    outcome = models.CharField(max_length=4, choices=Outcome.choices)
    judge_target = models.CharField(max_length=100, blank=True)
    judge_variant = models.CharField(max_length=60, blank=True)
    first_call = models.ForeignKey("router.ModelCall", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    second_call = models.ForeignKey("router.ModelCall", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    created_at = models.DateTimeField()

    class Meta:
        app_label = "drafting"
        ordering = ["pk"]
        indexes = [models.Index(fields=["judge_target", "judge_variant"], name="drafting_cmp_judge")]

    def __str__(self):
        return f"comparison {self.pk} ({self.outcome})"
