"""Hydration: the sources that feed a memory file system, the items they returned, and the
runs that turned those items into revisions."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from lindy.jobs import LeasedJob


class SourceKind(models.TextChoices):
    SLACK = "slack", "Slack"
    GMAIL = "gmail", "Gmail"
    MEETINGS = "meetings", "Meetings"
    TASKS = "tasks", "Assistant tasks"


class SourceState(models.Model):
    """One source of one file system: whether it is on, where its last success left off, and
    how its last attempt went."""

    class Status(models.TextChoices):
        NEVER = "never", "Never run"
        OK = "ok", "OK"
        ERROR = "error", "Error"
        NOT_CONNECTED = "not_connected", "Not connected"

    filesystem = models.ForeignKey("memory.FileSystem", on_delete=models.CASCADE, related_name="hydration_sources")
    source = models.CharField(max_length=20, choices=SourceKind.choices)
    enabled = models.BooleanField(default=True)
    cursor = models.JSONField(default=dict, blank=True, help_text="Where the last successful fetch left off.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.NEVER)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["filesystem", "source"]
        constraints = [models.UniqueConstraint(fields=["filesystem", "source"], name="hydration_source_unique")]

    def __str__(self):
        return f"{self.filesystem_id}:{self.source}"


class Schedule(models.Model):
    """When a file system's next scheduled run is due. Each file system gets its own slot in
    the interval, so runs spread out instead of all starting at once."""

    filesystem = models.OneToOneField("memory.FileSystem", on_delete=models.CASCADE, related_name="hydration_schedule")
    next_run_at = models.DateTimeField(db_index=True)

    def __str__(self):
        return f"{self.filesystem_id} at {self.next_run_at:%Y-%m-%d %H:%M}"


class Run(LeasedJob):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        NO_CHANGES = "no_changes", "Nothing new"
        NEEDS_ATTENTION = "needs_attention", "Needs attention"
        FAILED = "failed", "Failed"
        INTERRUPTED = "interrupted", "Interrupted"
        # The task queue (broker) was unreachable when the run was triggered: it never started. Not
        # live, so the next "Run now" starts again; the dispatch sweep re-queues it when the broker is back.
        ENQUEUE_FAILED = "enqueue_failed", "Could not be queued"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    class Trigger(models.TextChoices):
        SCHEDULE = "schedule", "Schedule"
        MANUAL = "manual", "Run now"
        COMMAND = "command", "manage.py hydrate"
        DEMO = "demo", "Demo"

    filesystem = models.ForeignKey("memory.FileSystem", on_delete=models.CASCADE, related_name="hydration_runs")
    trigger = models.CharField(max_length=10, choices=Trigger.choices)
    triggered_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    stage = models.CharField(max_length=200, blank=True, help_text="What the run is doing now.")
    # The lease (attempts, holder, task id, heartbeat, re-queued mark) is lindy.jobs.LeasedJob's;
    # this one is hydration's own backstop for a run whose heartbeat is off.
    lease_until = models.DateTimeField(null=True, blank=True,
                                       help_text="A running run whose lease passed was abandoned by its worker.")
    sources = models.JSONField(default=dict, blank=True,
                               help_text="Per source: status, items fetched, error.")
    item_count = models.PositiveIntegerField(default=0, help_text="Items summarized (new and left over).")
    fact_count = models.PositiveIntegerField(default=0)
    verifier_rounds = models.PositiveIntegerField(default=0)
    violations = models.JSONField(default=list, blank=True)
    model_calls = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    revision = models.OneToOneField("memory.Revision", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="hydration_run")
    agent_message = models.TextField(blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            # Never two live runs for one file system: the database refuses the second.
            models.UniqueConstraint(fields=["filesystem"], condition=Q(status__in=["queued", "running"]),
                                    name="hydration_one_active_run"),
        ]
        indexes = [models.Index(fields=["filesystem", "-created_at"]), models.Index(fields=["status", "lease_until"]),
                   LeasedJob.sweep_index("hydration_run_sweep")]

    def __str__(self):
        return f"run {self.pk} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def duration(self):
        if self.started_at and self.finished_at:
            return self.finished_at - self.started_at
        return None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class Item(models.Model):
    """Something a source returned, stored before anything else happens to it."""

    class AuthorKind(models.TextChoices):
        """Whose words the item holds, decided by its source when it fetched it."""

        # The user of a user memory (their sent mail, their Slack messages, their own meeting
        # notes); for a team memory, a member of the team.
        OWNER = "owner", "The memory's owner"
        TEAMMATE = "teammate", "A teammate"
        EXTERNAL = "external", "Someone outside the team"
        MIXED = "mixed", "Several people"
        # Mail the assistant sent for the user (its execution header): model-written, never the user's hand.
        ASSISTANT = "assistant", "The assistant"

    filesystem = models.ForeignKey("memory.FileSystem", on_delete=models.CASCADE, related_name="hydration_items")
    source = models.CharField(max_length=20, choices=SourceKind.choices)
    external_id = models.CharField(max_length=255)
    author = models.CharField(max_length=255, blank=True)
    # Blank (items stored before sources said) counts as someone else's words: never the owner's.
    author_kind = models.CharField(max_length=10, choices=AuthorKind.choices, blank=True)
    author_name = models.CharField(max_length=255, blank=True, help_text="How to name the author, e.g. Jane Park.")
    title = models.CharField(max_length=300, blank=True)
    reference = models.CharField(max_length=1000, blank=True, help_text="Permalink or in-product reference.")
    text = models.TextField()
    occurred_at = models.DateTimeField()
    fetched_by = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="fetched_items")
    processed_by = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="processed_items",
                                     help_text="The run whose revision (or verdict of nothing new) took it in.")
    processed_note = models.CharField(max_length=500, blank=True,
                                      help_text="Why it was marked processed (or kept for the next run).")
    left_out = models.PositiveSmallIntegerField(
        default=0, help_text="Runs whose memory agent passed without writing any of its facts.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["occurred_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["filesystem", "source", "external_id"], name="hydration_item_unique"),
        ]
        indexes = [models.Index(fields=["filesystem", "processed_by"])]

    def __str__(self):
        return f"{self.source}:{self.external_id}"

    @property
    def is_link(self) -> bool:
        return self.reference.startswith(("https://", "http://"))


class Fact(models.Model):
    """One fact the summarizer extracted in a run, with the items it came from."""

    class Kind(models.TextChoices):
        EPISODIC = "episodic", "Episodic"
        PROCEDURAL = "procedural", "Procedural"
        SEMANTIC = "semantic", "Semantic"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="facts")
    position = models.PositiveIntegerField()
    kind = models.CharField(max_length=12, choices=Kind.choices)
    text = models.TextField()
    items = models.ManyToManyField(Item, related_name="facts", blank=True)

    class Meta:
        ordering = ["run", "position"]

    def __str__(self):
        return f"{self.kind}: {self.text[:40]}"


class FileSource(models.Model):
    """Which items the memory agent said fed which file in a run's revision."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="file_sources")
    path = models.CharField(max_length=255)
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="file_sources")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "path", "item"], name="hydration_file_source_unique")]
        indexes = [models.Index(fields=["run", "path"])]

    def __str__(self):
        return f"{self.path} <- item {self.item_id}"
