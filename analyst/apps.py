from django.apps import AppConfig


class AnalystConfig(AppConfig):
    name = "analyst"
    verbose_name = "Analyst"

    def ready(self):
        from lindy import demo as core_demo
        from lindy import navigation, task_annotations
        from router import variants
        from router.routing import register_route
        from router.services.scores import register_metric

        from . import demo, offline, permissions, prompts, selectors, tasks  # noqa: F401  (offline rules, the task)
        from .services import METRIC

        register_route(prompts.ROUTE, owner=self.label,
                       description="Scores each finished run of the agent against the rubric.")
        variants.register({prompts.ROUTE: prompts.DESCRIPTIONS}, owner=self.label)
        # The router's guardrails compare rollout arms on it like on any online metric.
        register_metric(METRIC, higher_is_better=True, label="Analyst's rubric score of the task run the call served")
        navigation.register(navigation.NavItem(
            "analyst", "Analyst", "analyst:page", permissions.can_view_analyst, order=53,
        ))
        # The latest score on the task's page and in /api/tasks/{id}, by the analyst page's rule.
        task_annotations.register(task_annotations.Annotation(
            "analyst_score", "analyst/task_score.html",
            lambda user, task: selectors.latest_task_score(permissions.visible_scores(user), task.pk)
            if permissions.task_score_visible(user, task) else None,
        ))
        # After the agent's demo tasks (20, 95): each finished one gets its score.
        core_demo.register_seeder(97, demo.seed)
