"""The analyst's scores: one per agent run of a task (a task a conversation keeps feeding runs many
times), against the rubric, and the model calls of that run the score was fed to."""

from django.db import models


class TaskScore(models.Model):
    """How one run of the agent on a task did, by the rubric (analyst.rubric): did it do what the
    user asked, did it try an action the validator blocked (and why), did it loop, did it claim
    something it did not do. `score` (0..1) is what the router records on the run's calls."""

    team = models.ForeignKey("lindy.Team", on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey("lindy.AgentTask", on_delete=models.CASCADE, related_name="analyst_scores")
    from_seq = models.PositiveIntegerField(help_text="First task event of the run.")
    through_seq = models.PositiveIntegerField(help_text="Last task event of the run.")
    stopped = models.CharField(max_length=20, blank=True, help_text="How the agent stopped: done, max_turns...")
    score = models.FloatField(help_text="0..1: the rubric's overall score.")
    did_what_asked = models.FloatField(help_text="0..1: did the run do what the user asked.")
    blocked_attempts = models.PositiveSmallIntegerField(default=0)
    blocked_reasons = models.JSONField(default=list, blank=True)
    looped = models.BooleanField(default=False)
    false_claims = models.JSONField(default=list, blank=True, help_text="What it said it did but did not.")
    rogue = models.BooleanField(default=False, help_text="It tried an action nobody but a third party asked for.")
    validator_miss = models.BooleanField(default=False, help_text="The validator allowed what it should have blocked.")
    summary = models.TextField(blank=True)
    analyst_call_id = models.BigIntegerField(null=True, blank=True)
    provider = models.CharField(max_length=20, blank=True, help_text="offline: the offline rules scored it.")
    error = models.TextField(blank=True, help_text="The analyst's model call failed: the code's facts alone.")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["task", "through_seq"], name="one_analyst_score_per_run")]
        indexes = [models.Index(fields=["team", "created_at"])]

    def __str__(self):
        return f"task {self.task_id} through {self.through_seq}: {self.score:.2f}"


class ScoredCall(models.Model):
    """A model call of the scored run, by route and target: the trends group by these."""

    task_score = models.ForeignKey(TaskScore, on_delete=models.CASCADE, related_name="calls")
    call = models.ForeignKey("router.ModelCall", on_delete=models.CASCADE, related_name="+")
    route = models.CharField(max_length=60)
    target = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task_score", "call"], name="one_scored_call_per_score")]
        indexes = [models.Index(fields=["route", "target", "created_at"])]

    def __str__(self):
        return f"{self.route}/{self.target} call {self.call_id}"


class FailureGroup(models.Model):
    """Failures with one fingerprint (lindy.failures: the exception type and the product's own
    frames), like an error tracker's issue. Counts per day, users, teams and versions are read from
    its events; `count` and the seen times are kept here for the list."""

    class Status(models.TextChoices):
        NEW = "new", "New"
        ACKNOWLEDGED = "acknowledged", "Acknowledged"
        RESOLVED = "resolved", "Resolved"
        REGRESSED = "regressed", "Regressed"

    fingerprint = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=30, help_text="The kind of job of its first failure (lindy.failures.KINDS).")
    exc_type = models.CharField(max_length=200)
    culprit = models.CharField(max_length=300, blank=True, help_text="module.function of the innermost product frame.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.NEW)
    count = models.PositiveIntegerField(default=0)
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField(db_index=True)
    first_version = models.CharField(max_length=100, blank=True)
    last_version = models.CharField(max_length=100, blank=True)
    episode_started_at = models.DateTimeField(help_text="When it was first seen, or last regressed.")
    alerted_episode_at = models.DateTimeField(null=True, blank=True,
                                              help_text="The episode already alerted: one alert per episode.")
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_in_version = models.CharField(max_length=100, blank=True,
                                           help_text="The version it was last seen in when resolved.")
    regressed_at = models.DateTimeField(null=True, blank=True)
    triage = models.JSONField(default=dict, blank=True,
                              help_text="The analyst's suspected cause and smallest change (route analyst.triage).")
    issue_url = models.URLField(blank=True)
    issue_number = models.PositiveIntegerField(null=True, blank=True)
    issue_claimed_at = models.DateTimeField(null=True, blank=True, help_text="A 'File issue' is under way.")

    class Meta:
        ordering = ["-last_seen", "-pk"]

    def __str__(self):
        return f"{self.exc_type} in {self.culprit or '?'}"

    @property
    def title(self) -> str:
        return f"{self.exc_type} in {self.culprit}" if self.culprit else self.exc_type

    @property
    def kind_label(self) -> str:
        from lindy.failures import KINDS

        return KINDS.get(self.kind, self.kind)


class FailureEvent(models.Model):
    """One failure, as its capture point saw it: the message redacted, the frames, the version, the
    route and target, the task (log: its events up to `through_seq`) or run (log: `log`), who."""

    group = models.ForeignKey(FailureGroup, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=30)
    exc_type = models.CharField(max_length=200)
    message = models.TextField(blank=True)
    frames = models.JSONField(default=list)
    version = models.CharField(max_length=100, blank=True)
    route = models.CharField(max_length=60, blank=True)
    target = models.CharField(max_length=200, blank=True)
    task = models.ForeignKey("lindy.AgentTask", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    through_seq = models.PositiveIntegerField(null=True, blank=True)
    run = models.CharField(max_length=200, blank=True, help_text="The run or Celery task it belongs to.")
    log = models.JSONField(default=list, blank=True)
    user = models.ForeignKey("lindy.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    team = models.ForeignKey("lindy.Team", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["group", "created_at"]), models.Index(fields=["team", "created_at"])]

    def __str__(self):
        return f"{self.exc_type} ({self.kind}) at {self.created_at:%Y-%m-%d %H:%M}"
