from django.apps import AppConfig


class AnalystConfig(AppConfig):
    name = "analyst"
    verbose_name = "Analyst"

    def ready(self):
        from lindy import demo as core_demo
        from lindy import failures as core_failures
        from lindy import navigation, seams, task_annotations
        from router import variants
        from router.routing import register_route
        from router.services import register_metric

        from . import demo, offline, permissions, prompts, selectors, tasks  # noqa: F401  (offline rules, the task)
        from .failures import celery_signal, record
        from .failures import offline as failure_offline  # noqa: F401  (analyst.triage's offline rules)
        from .failures import prompts as failure_prompts
        from .services import METRIC

        register_route(prompts.ROUTE, owner=self.label, label="Task scoring",
                       description="Scores each finished run of the agent against the rubric.")
        variants.register({prompts.ROUTE: prompts.DESCRIPTIONS}, owner=self.label)
        # The router's guardrails compare rollout arms on it like on any online metric.
        register_metric(METRIC, higher_is_better=True, label="Analyst's rubric score of the task run the call served")
        navigation.register(navigation.NavItem(
            "analyst", "Task scores", "analyst:page", permissions.can_view_analyst, order=53,
        ))
        # Failures captured where they happen (lindy.failures), grouped here; and Celery's own.
        register_route(failure_prompts.ROUTE, owner=self.label, user_facing=False, label="Failure diagnosis",
                       description="Suggests the cause of a failure group and the smallest change, from its log and code.")
        core_failures.subscribe(record.failure_record)
        celery_signal.connect()
        navigation.register(navigation.NavItem(
            "failures", "Failures", "analyst:failures", permissions.can_view_failures, order=54,
        ))
        # The latest score on the task's page and in /api/tasks/{id}, by the analyst page's rule.
        task_annotations.register(task_annotations.Annotation(
            "analyst_score", "analyst/task_score.html",
            lambda user, task: selectors.latest_task_score(permissions.visible_scores(user), task.pk)
            if permissions.task_score_visible(user, task) else None,
        ))
        # After the agent's demo tasks (20, 95): each finished one gets its score.
        core_demo.register_seeder(97, demo.seed)
        core_demo.register_seeder(98, demo.seed_failures)
        # The agent says a run stopped (it never imports the analyst): score it.
        seams.agent_run_finished.connect(_score_finished_run, dispatch_uid="analyst.score_finished_run")


def _score_finished_run(sender, *, task_id: int, call_ids=(), stopped: str = "", **kwargs) -> None:
    from .services import task_score_queue

    task_score_queue(task_id=task_id, call_ids=call_ids, stopped=stopped)
