from django.apps import AppConfig


class AnalystConfig(AppConfig):
    name = "analyst"
    verbose_name = "Analyst"

    def ready(self):
        from lindy import demo as core_demo
        from lindy import navigation
        from router import variants
        from router.routing import register_route
        from router.services.scores import register_metric

        from . import demo, offline, permissions, prompts, tasks  # noqa: F401  (offline rules, the task)
        from .services import METRIC

        register_route(prompts.ROUTE, owner=self.label,
                       description="Scores each finished run of the agent against the rubric.")
        variants.register({prompts.ROUTE: prompts.DESCRIPTIONS}, owner=self.label)
        # The router's guardrails compare rollout arms on it like on any online metric.
        register_metric(METRIC, higher_is_better=True, label="Analyst's rubric score of the task run the call served")
        navigation.register(navigation.NavItem(
            "analyst", "Analyst", "analyst:page", permissions.can_view_analyst, order=53,
        ))
        # After the agent's demo tasks (20, 95): each finished one gets its score.
        core_demo.register_seeder(97, demo.seed)
