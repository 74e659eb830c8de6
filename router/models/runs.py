"""Runs against a route's eval set: offline evals (EvalRun, a result per case) and prompt
optimizations (OptimizationRun, a leased job of lindy.jobs)."""

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q

from lindy.jobs import LeasedJob

from .calls import ModelCall
from .config import Route, Target


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
