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
