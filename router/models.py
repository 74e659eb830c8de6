"""Which model serves each route, how routes move to cheaper models, and what every call cost."""

from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator
from django.db import models
from django.db.models import Q

from lindy.jobs import LeasedJob

from .provider_keys import validate_provider_key_env

# The largest budget or concurrency a form accepts: far above any provider's limit, inside an integer column.
MAX_BUDGET = 1_000_000_000


class Provider(models.Model):
    """An inference host. OpenAI-compatible hosts have a base URL and an API key read from
    the environment variable named here: keys never live in the database."""

    class Kind(models.TextChoices):
        ANTHROPIC = "anthropic", "Anthropic"
        OPENAI_COMPATIBLE = "openai", "OpenAI-compatible"
        OFFLINE = "offline", "Offline rules"

    name = models.SlugField(max_length=60, unique=True, help_text="e.g. atlas, deepseek, anthropic")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    base_url = models.URLField(blank=True, help_text="e.g. https://api.example.com/v1 (chat completions host).")
    api_key_env = models.CharField(
        max_length=100, blank=True, validators=[validate_provider_key_env],
        help_text="Name of the environment variable that holds the API key: LINDY_PROVIDER_KEY_<NAME>.",
    )
    timeout_seconds = models.PositiveIntegerField(default=60)
    max_retries = models.PositiveSmallIntegerField(default=2)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class ProviderBudget(models.Model):
    """A provider's requests and tokens per minute, set by a superuser (router.budgets reads it at
    every call); without a row the ROUTER_PROVIDER_BUDGETS setting applies. 0: unlimited."""

    key = models.SlugField(max_length=60, unique=True,
                           help_text="A provider's name (the host of its targets), or \"default\" for the rest.")
    requests_per_minute = models.PositiveIntegerField(validators=[MaxValueValidator(MAX_BUDGET)])
    tokens_per_minute = models.PositiveIntegerField(validators=[MaxValueValidator(MAX_BUDGET)])
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]

    def __str__(self):
        return f"{self.key}: {self.requests_per_minute} requests, {self.tokens_per_minute} tokens a minute"


class Target(models.Model):
    """A model as served by one provider, with its prices. The same model on two
    providers is two targets: they score differently."""

    class Provider(models.TextChoices):
        ANTHROPIC = "anthropic", "Anthropic"
        OPENAI_COMPATIBLE = "openai", "OpenAI-compatible"
        OFFLINE = "offline", "Offline rules"

    name = models.SlugField(max_length=100, unique=True, help_text="e.g. claude-sonnet-4-5@anthropic")
    provider = models.CharField(max_length=20, choices=Provider.choices)
    model = models.CharField(max_length=120)
    host = models.ForeignKey(
        "router.Provider", null=True, blank=True, on_delete=models.PROTECT, related_name="targets",
        help_text="Where the model is served (base URL and key). Required for OpenAI-compatible targets.",
    )
    quantization = models.CharField(max_length=30, blank=True, help_text="As the provider declares it.")
    user_selectable = models.BooleanField(
        default=False, help_text="Users may pick this target explicitly in their profile."
    )
    accepts_images = models.BooleanField(
        default=False, db_default=False,
        help_text="The model reads image content blocks; on other targets the gateway sends a text note instead.",
    )
    # Prices in USD per million tokens.
    input_price = models.DecimalField(max_digits=10, decimal_places=4, default=Decimal("0"))
    output_price = models.DecimalField(max_digits=10, decimal_places=4, default=Decimal("0"))
    cache_write_price = models.DecimalField(max_digits=10, decimal_places=4, default=Decimal("0"))
    cache_read_price = models.DecimalField(max_digits=10, decimal_places=4, default=Decimal("0"))
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def cost(self, *, input_tokens=0, output_tokens=0, cache_write_tokens=0, cache_read_tokens=0) -> Decimal:
        total = (
            self.input_price * input_tokens
            + self.output_price * output_tokens
            + self.cache_write_price * cache_write_tokens
            + self.cache_read_price * cache_read_tokens
        )
        return (total / Decimal(1_000_000)).quantize(Decimal("0.000001"))


class Route(models.Model):
    """A named kind of model call (agent, validator, memory.summarize...) and its baseline target."""

    name = models.CharField(max_length=60, unique=True)
    description = models.CharField(max_length=300, blank=True)
    baseline = models.ForeignKey(Target, on_delete=models.PROTECT, related_name="baseline_routes")
    baseline_variant = models.CharField(max_length=60, default="default", help_text="Prompt variant of the baseline.")
    max_tokens = models.PositiveIntegerField(default=4096, help_text="Default output budget of a call.")
    max_concurrency = models.PositiveIntegerField(
        null=True, blank=True, validators=[MaxValueValidator(MAX_BUDGET)],
        help_text="Calls in flight at once across all workers (router.budgets). Empty: the "
                  "ROUTER_ROUTE_CONCURRENCY setting; 0: no limit.")
    # Set when a superuser put the baseline in place without passing offline evidence (never on
    # an evidence-only route, router.registry); cleared when a baseline is set on evidence.
    baseline_override_reason = models.TextField(blank=True)
    baseline_override_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    baseline_override_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class PromptVariant(models.Model):
    """A named version of a route's prompt. The app owning the route builds its prompt from
    the variant name the router chose (its prompts.py takes `variant=`)."""

    route = models.ForeignKey(Route, on_delete=models.CASCADE, related_name="variants")
    name = models.SlugField(max_length=60)
    description = models.CharField(max_length=300, blank=True)
    # A stored variant (an optimizer's candidate): its prompt text per component ({"system": "..."}),
    # which router.variants serves for this name. Empty: the owning app's code builds the prompt.
    components = models.JSONField(default=dict, blank=True)
    parent = models.CharField(max_length=60, blank=True, help_text="The variant this one was evolved from.")
    eval_score = models.FloatField(null=True, blank=True, help_text="Its score on the eval set when it was found.")
    parent_score = models.FloatField(null=True, blank=True, help_text="The parent's score on the same cases.")
    holdout_score = models.FloatField(
        null=True, blank=True, help_text="An optimizer's candidate: its score on the held-out slice gepa never saw.")
    parent_holdout_score = models.FloatField(null=True, blank=True,
                                             help_text="The parent's score on the same held-out slice.")
    diff = models.TextField(blank=True, help_text="Unified diff of its text against the parent's.")
    optimization = models.ForeignKey(
        "router.OptimizationRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="candidates",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["route__name", "name"]
        constraints = [models.UniqueConstraint(fields=["route", "name"], name="one_variant_name_per_route")]

    def __str__(self):
        return f"{self.route.name}:{self.name}"


def default_stages() -> list[dict]:
    return [
        {"percent": 1, "min_hours": 24, "min_samples": 30},
        {"percent": 5, "min_hours": 24, "min_samples": 50},
        {"percent": 10, "min_hours": 48, "min_samples": 100},
        {"percent": 25, "min_hours": 48, "min_samples": 150},
        {"percent": 50, "min_hours": 72, "min_samples": 200},
        {"percent": 100, "min_hours": 0, "min_samples": 0},
    ]


class Rollout(models.Model):
    """Moves a percentage of a route's users from its baseline to a candidate (target, variant).

    Internal users get the candidate first; others by a sticky bucket of (salt, user id) in
    10,000 buckets, so raising the percentage keeps everyone already on the candidate."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"
        ROLLED_BACK = "rolled_back", "Rolled back"
        COMPLETED = "completed", "Completed"

    ACTIVE = (Status.RUNNING, Status.PAUSED)

    route = models.ForeignKey(Route, on_delete=models.CASCADE, related_name="rollouts")
    baseline = models.ForeignKey(Target, on_delete=models.PROTECT, related_name="+")
    baseline_variant = models.CharField(max_length=60, default="default")
    candidate = models.ForeignKey(Target, on_delete=models.PROTECT, related_name="candidate_rollouts")
    candidate_variant = models.CharField(max_length=60, default="default")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RUNNING, db_index=True)
    salt = models.CharField(max_length=40, help_text="Hashed with the user id to pick the user's bucket.")
    stages = models.JSONField(default=default_stages)
    stage_index = models.PositiveSmallIntegerField(default=0)
    percent = models.DecimalField(max_digits=5, decimal_places=2, default=Decimal("0"))
    stage_started_at = models.DateTimeField(null=True, blank=True)
    include_internal = models.BooleanField(default=True, help_text="Internal users get the candidate from the start.")
    # Guardrails.
    score_margin = models.FloatField(
        default=0.05, help_text="How much worse (0..1 score) the candidate may be than baseline before rolling back."
    )
    min_scored_calls = models.PositiveIntegerField(
        default=30, help_text="Scored calls each arm needs before a score comparison counts."
    )
    error_margin = models.FloatField(default=0.05, help_text="Extra error rate the candidate may have.")
    retention_days = models.PositiveSmallIntegerField(default=7)
    retention_margin = models.FloatField(default=0.10)
    min_retention_users = models.PositiveIntegerField(default=20)
    alpha = models.FloatField(
        default=0.05, help_text="Chance the guardrails roll back a candidate no worse than its margins, however "
        "often they look (router.sequential).",
    )
    latency_margin = models.FloatField(default=0.25, help_text="How much slower (share of baseline) the candidate may be.")
    cost_margin = models.FloatField(default=0.5, help_text="How much dearer per call (share of baseline) it may be.")
    # Offline evidence: the eval runs that let it start, or the superuser's override and why.
    offline_evidence = models.JSONField(default=dict, blank=True)
    override_reason = models.TextField(blank=True, help_text="Why it started without passing offline evidence.")
    override_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
    )
    last_check = models.JSONField(default=dict, blank=True)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["route"], condition=Q(status__in=["running", "paused"]), name="one_active_rollout_per_route"
            )
        ]

    def __str__(self):
        return f"{self.route.name}: {self.candidate.name}:{self.candidate_variant} at {self.percent}%"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def stage(self) -> dict:
        return self.stages[self.stage_index] if self.stages else {"percent": 0, "min_hours": 0, "min_samples": 0}

    @property
    def next_stage(self) -> dict | None:
        return self.stages[self.stage_index + 1] if self.stage_index + 1 < len(self.stages) else None


class RolloutEvent(models.Model):
    """A change to a rollout, with its reason: every change of percentage is one."""

    class Kind(models.TextChoices):
        STARTED = "started", "Started"
        RAMPED = "ramped", "Ramped"
        PAUSED = "paused", "Paused"
        RESUMED = "resumed", "Resumed"
        ROLLED_BACK = "rolled_back", "Rolled back"
        COMPLETED = "completed", "Completed"
        STAGES_EDITED = "stages_edited", "Stages edited"

    rollout = models.ForeignKey(Rollout, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    from_percent = models.DecimalField(max_digits=5, decimal_places=2)
    to_percent = models.DecimalField(max_digits=5, decimal_places=2)
    reason = models.TextField()
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        help_text="Empty when the guardrail job made the change.",
    )
    evidence = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self):
        return f"{self.kind} {self.from_percent}% -> {self.to_percent}%"


class ModelChoice(models.Model):
    """A user's explicit choice of model, for one route or (route empty) for all routes.
    It wins over any rollout."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="model_choices")
    route = models.CharField(max_length=60, blank=True, help_text="Empty: every route.")
    target = models.ForeignKey(Target, on_delete=models.CASCADE, related_name="choices")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "route"], name="one_model_choice_per_user_route")]

    def __str__(self):
        return f"{self.user} -> {self.target} on {self.route or 'all routes'}"


class ModelCall(models.Model):
    """One model call, as the gateway made it."""

    route = models.CharField(max_length=60, db_index=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    team = models.ForeignKey("lindy.Team", null=True, blank=True, on_delete=models.SET_NULL)
    target = models.ForeignKey(Target, null=True, blank=True, on_delete=models.SET_NULL)
    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=120)
    prompt_variant = models.CharField(max_length=60, blank=True, default="default")
    arm = models.CharField(max_length=20, blank=True, default="baseline")
    rollout = models.ForeignKey(Rollout, null=True, blank=True, on_delete=models.SET_NULL, related_name="calls")
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal("0"))
    latency_ms = models.PositiveIntegerField(default=0)
    stop_reason = models.CharField(max_length=30, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["route", "created_at"]),
            models.Index(fields=["team", "created_at"]),
            models.Index(fields=["user", "created_at"]),
            # The guardrail aggregates: one rollout's arm within a recent window.
            models.Index(fields=["rollout", "arm", "created_at"]),
        ]

    def __str__(self):
        return f"{self.route} via {self.provider}/{self.model}"


class CallScore(models.Model):
    """An online evaluation of one call: a judge's score or an outcome signal another app
    reported (router.services.call_score_record). Values are 0..1."""

    call = models.ForeignKey(ModelCall, on_delete=models.CASCADE, related_name="scores")
    metric = models.CharField(max_length=60)
    value = models.FloatField()
    source = models.CharField(max_length=60, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["call", "metric"], name="one_score_per_call_metric")]
        indexes = [models.Index(fields=["metric", "created_at"])]

    def __str__(self):
        return f"{self.metric}={self.value} on call {self.call_id}"


class CallSample(models.Model):
    """The request and answer of a sampled live call, kept so an online judge can score it."""

    call = models.OneToOneField(ModelCall, on_delete=models.CASCADE, related_name="sample")
    request = models.JSONField()
    response = models.JSONField()
    judged_at = models.DateTimeField(null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"sample of call {self.call_id}"


class EvalRun(models.Model):
    """One run of a route's offline eval set against a (target, prompt variant)."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    route = models.ForeignKey(Route, on_delete=models.CASCADE, related_name="eval_runs")
    target = models.ForeignKey(Target, on_delete=models.CASCADE, related_name="eval_runs")
    variant = models.CharField(max_length=60, default="default")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    total = models.PositiveIntegerField(default=0)
    completed = models.PositiveIntegerField(default=0)
    passed = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    score = models.FloatField(null=True, blank=True)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal("0"))
    provider_used = models.CharField(max_length=20, blank=True)
    error = models.TextField(blank=True)
    gate_failures = models.JSONField(
        default=list, blank=True,
        help_text="Why the finished run misses the thresholds of the app owning the route (empty: none missed).",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["route", "target", "variant"])]

    def __str__(self):
        return f"eval {self.route.name} on {self.target.name}:{self.variant}"

    @property
    def progress_percent(self) -> int:
        return int(100 * self.completed / self.total) if self.total else 0


class EvalResult(models.Model):
    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    case_id = models.CharField(max_length=100)
    expected = models.CharField(max_length=200, blank=True)
    got = models.CharField(max_length=200, blank=True)
    score = models.FloatField(default=0)
    passed = models.BooleanField(default=False)
    detail = models.TextField(blank=True)
    call = models.ForeignKey(ModelCall, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["pk"]
        constraints = [models.UniqueConstraint(fields=["run", "case_id"], name="one_result_per_case")]

    def __str__(self):
        return f"{self.case_id}: {'pass' if self.passed else 'fail'}"


class AuditAction(models.TextChoices):
    """The router's entries in the one audit log (lindy.AuditEntry): a change to its configuration
    (a route's baseline, a prompt variant, a target, a provider, a budget) or to a rollout."""

    ROUTE_BASELINE_SET = "route.baseline_set", "Route baseline changed"
    PROMPT_VARIANT_CREATED = "prompt_variant.created", "Prompt variant added"
    TARGET_CREATED = "target.created", "Target added"
    PROVIDER_CREATED = "provider.created", "Provider added"
    PROVIDER_UPDATED = "provider.updated", "Provider URL or key variable changed"
    PROVIDER_BUDGET_SET = "provider_budget.set", "Provider budget changed"
    ROUTE_CONCURRENCY_SET = "route.concurrency_set", "Route concurrency changed"


class OptimizationRun(LeasedJob):
    """Reflective prompt evolution (the gepa library) of one route's prompt against its eval set,
    on one target, within a budget stated before it starts (router.services.optimize). The
    Pareto-best candidates become stored PromptVariants; none reaches users until it passes its
    own offline eval and a gated rollout. `state` is gepa's state after the last finished
    generation, so a run cut off by a worker restart resumes there."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    route = models.ForeignKey(Route, on_delete=models.CASCADE, related_name="optimizations")
    target = models.ForeignKey(Target, on_delete=models.PROTECT, related_name="+")
    parent_variant = models.CharField(max_length=60, default="default")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True)
    # The budget, stated before it starts; the run stops before a call would exceed any of them.
    budget_usd = models.DecimalField(max_digits=10, decimal_places=4)
    budget_calls = models.PositiveIntegerField()
    budget_tokens = models.PositiveIntegerField()
    spent_usd = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal("0"))
    spent_calls = models.PositiveIntegerField(default=0)
    spent_tokens = models.PositiveIntegerField(default=0)
    generation = models.PositiveIntegerField(default=0, help_text="Generations finished (gepa iterations).")
    candidates_seen = models.PositiveIntegerField(default=0)
    parent_score = models.FloatField(null=True, blank=True)
    best_score = models.FloatField(null=True, blank=True)
    case_count = models.PositiveIntegerField(default=0)
    split = models.JSONField(default=dict, blank=True,
                             help_text="Which eval case went where: {train, val, holdout: [case ids]}.")
    provider_used = models.CharField(max_length=20, blank=True)
    state = models.BinaryField(null=True, blank=True, editable=False,
                               help_text="gepa's state after the last finished generation.")
    log = models.JSONField(default=list, blank=True, help_text="What happened, one line per step.")
    stop_reason = models.TextField(blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["route"], condition=Q(status__in=["queued", "running"]),
                                    name="one_active_optimization_per_route"),
        ]
        indexes = [LeasedJob.sweep_index("router_optrun_sweep")]

    def __str__(self):
        return f"optimization {self.pk} of {self.route.name} on {self.target.name}"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def spend_percent(self) -> int:
        """The largest share of any of the three budgets spent so far."""
        shares = [
            float(self.spent_usd / self.budget_usd) if self.budget_usd else 0.0,
            self.spent_calls / self.budget_calls if self.budget_calls else 0.0,
            self.spent_tokens / self.budget_tokens if self.budget_tokens else 0.0,
        ]
        return min(100, int(100 * max(shares)))
