from django.apps import AppConfig


class RouterConfig(AppConfig):
    name = "router"
    verbose_name = "Model router"

    def ready(self):
        from django.conf import settings
        from django.db.models.signals import post_migrate

        from lindy import demo as core_demo
        from lindy import navigation, schedules

        from . import demo, offline_policies, permissions, prompts, routing, signals, variants  # noqa: F401  (offline rules, cache invalidation)
        from .services.online_eval import JUDGE_ROUTE

        routing.register_route(JUDGE_ROUTE, owner=self.label, user_facing=False,
                               description="Scores a sample of live calls for rollout guardrails.")
        variants.register({JUDGE_ROUTE: prompts.DESCRIPTIONS}, owner=self.label)
        post_migrate.connect(routing.ensure_defaults_on_migrate, sender=self)
        navigation.register(
            navigation.NavItem("models", "Models", "router:routes", permissions.can_view_team_usage, order=40)
        )
        navigation.register(
            navigation.NavItem("my-model", "My model", "router:my-model", permissions.can_choose_model_only, order=41)
        )
        schedules.register(
            schedules.Periodic(
                name="router.guardrails",
                task="router.tasks.guardrails_check",
                every_seconds=settings.ROUTER_GUARDRAIL_EVERY_SECONDS,
                description="Judges sampled calls, then ramps healthy rollouts or rolls back degraded ones.",
            )
        )
        core_demo.register_seeder(30, demo.seed)
