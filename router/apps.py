from django.apps import AppConfig


class RouterConfig(AppConfig):
    name = "router"
    verbose_name = "Model router"

    def ready(self):
        from lindy import metrics as core_metrics

        from . import metrics

        core_metrics.register("router", metrics.collect)  # its lindy_* figures on /metrics
        from lindy import audit

        from .models import AuditAction, RolloutEvent

        audit.labels_register(dict(AuditAction.choices))
        audit.labels_register({f"rollout.{kind}": f"Rollout {label.lower()}" for kind, label in RolloutEvent.Kind.choices})
        from django.conf import settings
        from django.db.models.signals import post_migrate

        from lindy import demo as core_demo
        from lindy import home, navigation, schedules

        from . import (  # noqa: F401  (offline rules, cache invalidation)
            demo,
            offline_policies,
            permissions,
            prompts,
            routing,
            selectors,
            signals,
            tasks,  # noqa: F401  (registers optimization_run, which services enqueue by name)
            variants,
        )
        from .services.online_eval import JUDGE_ROUTE

        routing.register_route(JUDGE_ROUTE, owner=self.label, user_facing=False, label="Quality checks of live answers",
                               description="Scores a sample of live calls for rollout guardrails.")
        variants.register({JUDGE_ROUTE: prompts.DESCRIPTIONS}, owner=self.label)
        routing.register_route(prompts.REFLECT_ROUTE, owner=self.label, label="Prompt improvement",
                               description="The prompt optimizer's reflection: rewrites a prompt against failing eval cases.")
        variants.register({prompts.REFLECT_ROUTE: prompts.REFLECT_DESCRIPTIONS}, owner=self.label)
        self._triage()
        post_migrate.connect(routing.ensure_defaults_on_migrate, sender=self)
        navigation.register(
            navigation.NavItem("models", "Model routing", "router:routes", permissions.can_view_team_usage, order=40)
        )
        navigation.register(
            navigation.NavItem("my-model", "Model choice", "router:my-model", permissions.can_choose_model_only, order=41)
        )
        home.register(home.Tile("rollouts", "router/home_rollouts.html", permissions.can_manage_models,
                                selectors.home_rollouts, order=10))
        home.register(home.Tile("cost-trend", "router/home_costs.html", permissions.can_manage_models,
                                selectors.home_cost_trend, order=30))
        schedules.register(
            schedules.Periodic(
                name="router.guardrails",
                task="router.tasks.guardrails_check",
                every_seconds=settings.ROUTER_GUARDRAIL_EVERY_SECONDS,
                description="Judges sampled calls, then ramps healthy rollouts or rolls back degraded ones.",
            )
        )
        schedules.register(
            schedules.Periodic(
                name="router.optimization_recover",
                task="router.tasks.optimization_recover",
                every_seconds=settings.ROUTER_OPTIMIZE_RECOVER_EVERY_SECONDS, previous_every=(60,),
                description="Queues again the prompt optimizations whose worker went quiet (they resume from "
                            "their last generation).",
            )
        )
        core_demo.register_seeder(30, demo.seed)

    def _triage(self):
        """The optimizer's worked example (router.triage): a route, its eval set's request builder
        and verdict, and its prompt open to optimization."""
        from . import routing, triage, variants
        from .services.evals import register_request_builder
        from .services.optimize import register_optimizable

        routing.register_route(triage.ROUTE, owner=self.label, user_facing=False, label="Support message sorting (example)",
                               description="The prompt optimizer's worked example: sorts a support message into "
                                           "reply, billing or security.")
        variants.register({triage.ROUTE: triage.DESCRIPTIONS}, owner=self.label)
        register_request_builder(triage.ROUTE, triage.eval_request, variants=lambda: triage.VARIANTS,
                                 verdict=triage.verdict)
        register_optimizable(triage.ROUTE, components=triage.components)
