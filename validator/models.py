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
    # V2: how the validation was sent, and what the prompt cache did for it.
    validation_mode = models.CharField(
        max_length=20, choices=[("shared_prefix", "Shared the agent's prefix"), ("separate", "Separate call")],
        blank=True, help_text="Empty when no model was asked.",
    )
    mode_note = models.CharField(max_length=300, blank=True, help_text="Why a separate call was made.")
    router_target = models.ForeignKey("router.Target", null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="+", help_text="The route target that served the call.")
    prompt_tokens = models.PositiveIntegerField(default=0, help_text="Input, cache read and cache write tokens.")
    cache_read_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    prefix_share = models.FloatField(
        null=True, blank=True,
        help_text="Share of the prompt the provider's cache would serve from the agent's last request (same "
                  "model and tool_choice, up to a breakpoint; router.prompt_cache).",
    )
    # Safety (approved) and quality, scored apart: quality never changes approved.
    quality_score = models.PositiveSmallIntegerField(null=True, blank=True)
    quality_assessment = models.TextField(blank=True)

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
        # checked on those few rows. "All decisions" leaves out the exempt ones (30 % or more): its own
        # partial index, with the team in it, serves that exact filter and order from the index alone,
        # so a deep page skips its offset (and the capped count reads its rows) without the table.
        # The admins' statistics read (team, created_at) and the columns they
        # count, all from the index.
        indexes = [
            # team included: the blocked list counts the user's decisions in their current teams from
            # the index alone (an index-only scan instead of a heap read per decision).
            models.Index(fields=["user", "status", "-created_at", "-id"], include=["team"],
                         name="decision_user_status_newest"),
            models.Index(fields=["user", "-created_at", "-id"], name="decision_user_newest"),
            models.Index(fields=["user", "-created_at", "-id"], include=["team"], condition=~models.Q(status="exempt"),
                         name="decision_user_shown_newest"),
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

    @property
    def cache_hit_rate(self) -> float | None:
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else None


class DecisionDay(models.Model):
    """One team's validated decisions of one tool on one (past) day: what the admins' statistics
    read instead of the decisions themselves, so the page costs O(days), not O(decisions).
    Written only by validator.daily_stats, once the day has ended; never updated after."""

    team = models.ForeignKey("lindy.Team", on_delete=models.CASCADE, related_name="+")
    tool = models.CharField(max_length=100)
    day = models.DateField()
    total = models.PositiveIntegerField()
    blocked = models.PositiveIntegerField(help_text="Not approved by the validator (failures included).")
    failures = models.PositiveIntegerField(help_text="The validator could not give a verdict.")

    class Meta:
        # The unique index (team, day, tool) also serves the page's read: its teams, a range of days.
        constraints = [models.UniqueConstraint(fields=["team", "day", "tool"], name="one_decision_day_per_tool")]

    def __str__(self):
        return f"{self.tool} on {self.day} for team {self.team_id}: {self.total}"


class DecisionRollup(models.Model):
    """The one row saying through which day DecisionDay is complete: later days are read live."""

    through = models.DateField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"decision statistics rolled up through {self.through}"


class EvalMatrix(models.Model):
    """One run of the validator's eval suite across prompt variants × targets (model sizes): the
    seed's 540-run matrix per change. The cases are copied in when the run starts, so every cell
    judges the same suite even if a candidate is accepted meanwhile."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        DONE = "done", "Done"

    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+", help_text="Empty when run from the command line.")
    cases = models.JSONField(default=list)
    case_count = models.PositiveIntegerField(default=0)
    concurrency = models.PositiveSmallIntegerField(default=2, help_text="Cells running at once, at most.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RUNNING)
    gate_passed = models.BooleanField(null=True, blank=True, help_text="Every cell met the thresholds; empty while running.")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self):
        return f"validator eval matrix #{self.pk}"


class EvalCell(models.Model):
    """One (target, prompt variant) of a matrix: every case judged once, and the numbers the
    thresholds are about."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        SKIPPED = "skipped", "Skipped"
        FAILED = "failed", "Failed"

    FINISHED = (Status.DONE, Status.SKIPPED, Status.FAILED)

    matrix = models.ForeignKey(EvalMatrix, on_delete=models.CASCADE, related_name="cells")
    target = models.ForeignKey("router.Target", on_delete=models.CASCADE, related_name="+")
    variant = models.CharField(max_length=60)
    quality = models.BooleanField(default=False, help_text="The verdict also assessed quality (V2): the matrix "
                                  "compares safety accuracy with it on and off.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True)
    total = models.PositiveIntegerField(default=0)
    completed = models.PositiveIntegerField(default=0)
    correct = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0, help_text="Model errors and output the product would refuse.")
    general_total = models.PositiveIntegerField(default=0)
    general_correct = models.PositiveIntegerField(default=0)
    general_must_block = models.PositiveIntegerField(default=0)
    dangerous_must_block = models.PositiveIntegerField(default=0)
    must_allow = models.PositiveIntegerField(default=0)
    wrong_approvals_general = models.PositiveIntegerField(default=0)
    wrong_approvals_dangerous = models.PositiveIntegerField(default=0)
    false_blocks = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    latency_ms_total = models.PositiveBigIntegerField(default=0)
    model_calls = models.PositiveIntegerField(default=0)
    results = models.JSONField(default=list, blank=True, help_text="Per case: expected, got, category, cost, latency.")
    gate_passed = models.BooleanField(null=True, blank=True)
    gate_failures = models.JSONField(default=list, blank=True)
    detail = models.TextField(blank=True, help_text="Why the cell was skipped or failed.")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["pk"]
        constraints = [
            models.UniqueConstraint(fields=["matrix", "target", "variant", "quality"],
                                    name="one_cell_per_target_variant_quality"),
        ]

    def __str__(self):
        return f"{self.target_id}:{self.variant} in matrix {self.matrix_id}"

    @staticmethod
    def _rate(part: int, whole: int) -> float | None:
        return part / whole if whole else None

    @property
    def accuracy(self) -> float | None:
        return self._rate(self.correct, self.completed)

    @property
    def general_accuracy(self) -> float | None:
        return self._rate(self.general_correct, self.general_total)

    @property
    def general_wrong_approval_rate(self) -> float | None:
        return self._rate(self.wrong_approvals_general, self.general_must_block)

    @property
    def false_block_rate(self) -> float | None:
        return self._rate(self.false_blocks, self.must_allow)

    @property
    def mean_latency_ms(self) -> int | None:
        return self.latency_ms_total // self.model_calls if self.model_calls else None

    @property
    def reads_prompt(self) -> bool:
        """False on the offline rules: they judge the request's data, whatever the prompt variant, so
        their one cell stands for every variant (eval_matrix.cell_variants)."""
        return self.target.provider != "offline"

    @property
    def variant_label(self) -> str:
        return self.variant if self.reads_prompt else "any (the offline rules read no prompt)"

    @property
    def name(self) -> str:
        return (f"{self.target.name}:{self.variant if self.reads_prompt else 'any-variant'}"
                + (":quality-on" if self.quality else ""))

    @property
    def progress_percent(self) -> int:
        return int(100 * self.completed / self.total) if self.total else 0

    @property
    def finished(self) -> bool:
        return self.status in self.FINISHED


class EvalCandidate(models.Model):
    """A real decision proposed as an eval case: a block the user overrode, or an approval they
    flag. History and action are copied; a staff reviewer or the team's admin accepts it before
    it joins the suite."""

    class Status(models.TextChoices):
        CANDIDATE = "candidate", "Candidate"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"

    class Outcome(models.TextChoices):
        BLOCK = "block", "Must be blocked"
        ALLOW = "allow", "Must be allowed"

    class Source(models.TextChoices):
        USER = "user", "Proposed by the decision's user"
        ANALYST = "analyst", "Drafted by the analyst"

    team = models.ForeignKey("lindy.Team", on_delete=models.CASCADE, related_name="+")
    decision = models.OneToOneField(Decision, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="eval_candidate")
    proposed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    tool = models.CharField(max_length=100)
    arguments = models.JSONField(default=dict)
    justification = models.TextField(blank=True)
    history = models.JSONField(default=list)
    category = models.CharField(max_length=20, help_text="general or dangerous (money moving, data leaving).")
    expected_outcome = models.CharField(max_length=10, choices=Outcome.choices)
    validator_said = models.CharField(max_length=10, help_text="What the validator decided at the time.")
    note = models.TextField(blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.USER, db_default=Source.USER,
                              help_text="Who drafted it: the decision's user, or the analyst (a rogue pattern "
                                        "or a suspected validator miss; the note says why).")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.CANDIDATE, db_index=True)
    reviewed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    reviewed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self):
        return f"eval candidate {self.pk} ({self.status})"

    @property
    def case_id(self) -> str:
        return f"candidate-{self.pk}"

    def as_case(self) -> dict:
        """The candidate in the suite's case format."""
        return {
            "id": self.case_id,
            "description": self.note or f"From decision #{self.decision_id}: {registry.describe(self.tool, self.arguments)}",
            "category": self.category,
            "history": [
                {"actor": e.get("actor", ""), "name": e.get("name") or "", "content": e.get("content") or ""}
                for e in self.history
            ],
            "action": {"tool": self.tool, "arguments": self.arguments, "justification": self.justification},
            "expected": {"outcome": self.expected_outcome},
        }


class BlockRateHour(models.Model):
    """Validated decisions of one ended hour, per tool and per prompt variant: what the anomaly job
    compares with its trailing baseline. Written once per (hour, dimension, key) by
    validator.anomalies; never updated after."""

    class Dimension(models.TextChoices):
        TOOL = "tool", "Tool"
        VARIANT = "variant", "Prompt variant"

    hour = models.DateTimeField()
    dimension = models.CharField(max_length=10, choices=Dimension.choices)
    key = models.CharField(max_length=100)
    total = models.PositiveIntegerField()
    blocked = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["dimension", "key", "hour"], name="one_block_rate_hour")]
        indexes = [models.Index(fields=["hour"], name="block_rate_hour_hour")]

    def __str__(self):
        return f"{self.dimension} {self.key} at {self.hour}: {self.blocked}/{self.total}"


class BlockRateRollup(models.Model):
    """The one row saying through which hour BlockRateHour is complete."""

    through = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"block rates rolled up through {self.through}"


class BlockRateAlert(models.Model):
    """A block rate (of one tool or one prompt variant) certainly above, or certainly below, its
    trailing baseline. One alert per episode: while it stays open, later anomalous hours in the
    same direction update it instead of raising another; it closes after a full window back at
    the baseline. Each is pushed to support once (BlockRateAlertPush)."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed (back to baseline)"

    class Direction(models.TextChoices):
        RISE = "rise", "Rise (blocking more)"
        DROP = "drop", "Drop (blocking less)"

    dimension = models.CharField(max_length=10, choices=BlockRateHour.Dimension.choices)
    key = models.CharField(max_length=100)
    direction = models.CharField(max_length=4, choices=Direction.choices, default=Direction.RISE,
                                 db_default=Direction.RISE)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True)
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    blocked = models.PositiveIntegerField()
    total = models.PositiveIntegerField()
    baseline_blocked = models.PositiveIntegerField()
    baseline_total = models.PositiveIntegerField()
    p_value = models.FloatField(help_text="One-sided exact binomial test against the baseline rate, in the "
                                          "alert's direction.")
    alpha = models.FloatField(help_text="The per-test false-alarm rate the alert was raised at.")
    peak_rate = models.FloatField(default=0)
    hours_anomalous = models.PositiveIntegerField(default=1)
    last_anomalous_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["dimension", "key"], condition=models.Q(status="open"),
                                    name="one_open_block_rate_alert"),
        ]

    def __str__(self):
        return f"block rate alert {self.dimension} {self.key} ({self.status})"

    @property
    def rate(self) -> float:
        return self.blocked / self.total if self.total else 0.0

    @property
    def baseline_rate(self) -> float:
        return self.baseline_blocked / self.baseline_total if self.baseline_total else 0.0


class BlockRateAlertPush(models.Model):
    """One way (lindy.ops_alerts: email, slack) an alert was told to support. The unique pair is the
    claim that makes each way send once per episode, whatever retries and redeliveries happen."""

    alert = models.ForeignKey(BlockRateAlert, on_delete=models.CASCADE, related_name="pushes")
    way = models.CharField(max_length=30)
    pushed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["alert", "way"], name="one_push_per_alert_and_way")]

    def __str__(self):
        return f"alert {self.alert_id} pushed by {self.way}"
