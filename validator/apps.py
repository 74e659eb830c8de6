from django.apps import AppConfig


class ValidatorConfig(AppConfig):
    name = "validator"
    verbose_name = "Action validator"

    def ready(self):
        from lindy import navigation
        from router.routing import register_route
        from router.services.evals import register_request_builder

        from . import offline, permissions, prompts  # noqa: F401  (offline registers the validator's offline rules)
        from .evals import build_eval_request, eval_verdict
        from .selectors import blocked_badge
        from .services import ROUTE

        register_route(ROUTE, owner=self.label,
                       description="Checks an action's justification before it reaches a third party.")

        navigation.register(navigation.NavItem(
            "blocked-actions", "Blocked actions", "validator-blocked", permissions.can_review_actions, order=20,
            badge=blocked_badge,
        ))
        navigation.register(navigation.NavItem(
            "metrics", "Metrics", "validator-stats", permissions.can_view_decision_stats, order=50,
        ))
        register_request_builder(
            "validator", build_eval_request, variants=lambda: prompts.VARIANTS, verdict=eval_verdict,
        )
