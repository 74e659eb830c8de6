"""Which model serves each route, how routes move to cheaper models, and what every call cost; one
module per part: the configuration (config.py: providers, targets, routes, prompt variants, model
choices), rollouts (rollouts.py), the calls and their scores (calls.py), eval and optimization runs
(runs.py)."""

from .calls import CallSample, CallScore, ModelCall
from .config import MAX_BUDGET, AuditAction, ModelChoice, PromptVariant, Provider, ProviderBudget, Route, Target
from .rollouts import Rollout, RolloutEvent, default_stages
from .runs import EvalResult, EvalRun, OptimizationRun

__all__ = [
    "MAX_BUDGET", "AuditAction", "CallSample", "CallScore", "EvalResult", "EvalRun", "ModelCall", "ModelChoice",
    "OptimizationRun", "PromptVariant", "Provider", "ProviderBudget", "Rollout", "RolloutEvent", "Route", "Target",
    "default_stages",
]
