from django.apps import AppConfig


class AgentConfig(AppConfig):
    name = "agent"
    verbose_name = "Assistant agent"

    def ready(self):
        from lindy import demo as core_demo
        from validator import runner

        from . import demo, offline  # noqa: F401  (offline registers the agent route's offline rules)
        from .services import ActionRunner

        runner.register(ActionRunner())
        core_demo.register_seeder(20, demo.seed)
