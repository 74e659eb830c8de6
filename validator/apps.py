from django.apps import AppConfig


class ValidatorConfig(AppConfig):
    name = "validator"
    verbose_name = "Action validator"

    def ready(self):
        from lindy import metrics as core_metrics

        from . import metrics

        core_metrics.register("validator", metrics.collect)  # its lindy_* figures on /metrics
        from lindy import demo as core_demo
        from lindy import home, navigation, schedules
        from router import variants
        from router.routing import register_route
        from router.services import register_guardrail_hook, register_optimizable
        from router.services.evals import register_case_source, register_eval_gate, register_request_builder

        # offline registers the validator's offline rules; tasks registers eval_cell, which
        # eval_matrix enqueues by name.
        from . import anomalies, demo, offline, permissions, prompts, tasks  # noqa: F401
        from .eval_matrix import accepted_cases, run_gate_failures
        from .eval_suite import build_request
        from .evals import eval_verdict
        from .selectors import blocked_badge, home_tile
        from .services import ROUTE

        # evidence_only: the validator's model decides what reaches third parties, so its baseline and
        # rollouts move only on its eval set passing its gate; no superuser override applies.
        register_route(ROUTE, owner=self.label, evidence_only=True, label="Action checks",
                       description="Checks an action's justification before it reaches a third party.")
        variants.register({ROUTE: prompts.DESCRIPTIONS}, owner=self.label)

        navigation.register(navigation.NavItem(
            "blocked-actions", "Blocked actions", "validator-blocked", permissions.can_review_actions, order=20,
            badge=blocked_badge,
        ))
        home.register(home.Tile("blocked-actions", "validator/home_tile.html", permissions.can_review_actions,
                                home_tile, order=10))
        navigation.register(navigation.NavItem(
            "metrics", "Review statistics", "validator-stats", permissions.can_view_decision_stats, order=50,
        ))
        navigation.register(navigation.NavItem(
            "validator-cache", "Validator cost & alerts", "validator-cache", permissions.can_view_eval_matrix,
            order=53,
        ))
        navigation.register(navigation.NavItem(
            "validator-evals", "Validator evals", "validator-evals", permissions.can_view_eval_matrix, order=51,
        ))
        navigation.register(navigation.NavItem(
            "eval-candidates", "Eval candidates", "validator-eval-candidates",
            permissions.can_review_eval_candidates, order=52,
        ))
        schedules.register(schedules.Periodic(
            name="validator.stats_rollup", task="validator.tasks.stats_rollup", every_seconds=600,
            description="Rolls up the decisions of each ended day for the admins' statistics (a page "
                        "then reads one row per team, tool and day).",
        ))
        schedules.register(schedules.Periodic(
            name="validator.block_rate_anomalies", task="validator.tasks.block_rate_anomalies", every_seconds=3600,
            description="Compares each tool's and prompt variant's block rate of the last hour with its trailing "
                        "week (exact binomial test, false-alarm rate 1e-6 per test) and raises alerts.",
        ))
        # An open block-rate alert holds a validator rollout; one on its candidate variant rolls it back.
        register_guardrail_hook(ROUTE, anomalies.guardrail_findings)
        # After the router's seeder (30), which creates the targets the matrix runs on.
        core_demo.register_seeder(40, demo.seed)
        register_request_builder(
            "validator", build_request, variants=lambda: prompts.VARIANTS, verdict=eval_verdict,
        )
        # A rollout's offline evidence on this route must meet the seed's thresholds too.
        register_eval_gate("validator", run_gate_failures)
        # Accepted candidates (from decisions and from the analyst) run with the file's cases in
        # every eval of the route, and the prompt optimizer evolves the validator's system prompt.
        register_case_source("validator", accepted_cases)
        register_optimizable("validator", components=lambda variant: {"system": prompts.system_prompt(variant)})
