from django.apps import AppConfig


class AgentConfig(AppConfig):
    name = "agent"
    verbose_name = "Assistant agent"

    def ready(self):
        from lindy import demo as core_demo
        from router import variants
        from router.routing import register_route
        from validator import runner

        from . import (  # noqa: F401  (offline registers the agent route's offline rules)
            demo,
            demo_history,
            offline,
            prompts,
            tasks,  # noqa: F401  (registers agent_run, which the runner enqueues by name)
        )
        from .loop import ROUTE
        from .services import ActionRunner

        register_route(ROUTE, owner=self.label, description="The assistant's own turns in a task.")
        variants.register({ROUTE: prompts.DESCRIPTIONS}, owner=self.label)

        runner.register(ActionRunner())
        core_demo.register_seeder(20, demo.seed)
        # Last: it needs the router's targets (30) and leaves its tasks for the next hydration (90).
        core_demo.register_seeder(95, demo_history.seed)
