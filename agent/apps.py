from django.apps import AppConfig


class AgentConfig(AppConfig):
    name = "agent"
    verbose_name = "Assistant agent"

    def ready(self):
        from django.conf import settings

        from lindy import demo as core_demo
        from lindy import schedules, seams
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
        from .services import ActionRunner, handle_inbound

        register_route(ROUTE, owner=self.label, label="The assistant", description="The assistant's own turns in a task.")
        variants.register({ROUTE: prompts.DESCRIPTIONS}, owner=self.label)

        runner.register(ActionRunner())
        # Channels hand each debounced bundle of a user's texts to the agent through this hook.
        seams.register_inbound_handler(handle_inbound)
        schedules.register(schedules.Periodic(
            name="agent.outbox_resume", task="agent.tasks.outbox_resume",
            every_seconds=settings.LINDY_ACTION_RESUME_AFTER_SECONDS,
            description="Live Gmail/Calendar actions left not confirmed: ask the provider, then finish them once.",
        ))
        core_demo.register_seeder(20, demo.seed)
        # After the router's targets (30), before channels give the demo users texting profiles (40):
        # the loop's message after each action is refused ("never texted in"), so the history sends
        # no text and leaves the texting demo's figures alone. Hydration (90) reads its tasks.
        core_demo.register_seeder(35, demo_history.seed)
