"""Every write of the router: configuration (audited), rollouts, guardrails, explicit choices,
scores, evals."""

from .audit import audit_event_record
from .choices import model_choice_clear, model_choice_set
from .config import (
    prompt_variant_create,
    provider_create,
    provider_update,
    route_baseline_set,
    target_create,
)
from .evals import eval_run_create, eval_run_execute, eval_run_start
from .evidence import MissingEvidence, rollout_evidence
from .guardrails import check_all as guardrails_check_all
from .guardrails import register_guardrail_hook, rollout_check
from .limits import provider_budget_clear, provider_budget_set, route_concurrency_set
from .optimize import (
    optimization_recover,
    optimization_run_create,
    optimization_run_execute,
    optimization_run_start,
    register_optimizable,
)
from .rollouts import (
    rollout_complete,
    rollout_pause,
    rollout_ramp,
    rollout_resume,
    rollout_roll_back,
    rollout_stages_update,
    rollout_start,
)
from .scores import call_score_record, register_metric

__all__ = [
    "audit_event_record", "call_score_record", "eval_run_create", "eval_run_execute", "eval_run_start", "MissingEvidence", "rollout_evidence", "guardrails_check_all", "model_choice_clear",
    "model_choice_set", "prompt_variant_create", "provider_budget_clear", "provider_budget_set", "provider_create", "provider_update", "register_metric", "rollout_check", "rollout_complete", "rollout_pause", "rollout_ramp",
    "rollout_resume", "rollout_roll_back", "rollout_stages_update", "rollout_start", "route_baseline_set", "route_concurrency_set",
    "target_create", "optimization_recover", "optimization_run_create", "optimization_run_execute",
    "optimization_run_start", "register_optimizable", "register_guardrail_hook",
]
