from django.apps import AppConfig


class HydrationConfig(AppConfig):
    name = "hydration"
    verbose_name = "Memory hydration"

    def ready(self):
        from lindy import metrics as core_metrics

        from . import metrics

        core_metrics.register("hydration", metrics.collect)  # its lindy_* figures on /metrics
        from django.conf import settings

        from lindy import demo as core_demo
        from lindy import home, navigation, schedules
        from router import variants
        from router.routing import register_route

        from . import (
            agent,
            demo,
            offline,  # noqa: F401  (registers the offline policies of both routes)
            permissions,
            prompts,
            selectors,
            signals,  # noqa: F401  (a new file system gets its schedule slot)
            summarizer,
            tasks,  # noqa: F401  (registers the tasks services enqueue by name through lindy.queue)
        )

        register_route(summarizer.ROUTE, owner=self.label, label="Memory updates: summarizing",
                       description="Condenses new hydration items into tagged facts.")
        register_route(agent.ROUTE, owner=self.label, label="Memory updates: writing", description="Edits a memory file system from the summaries.")
        variants.register({summarizer.ROUTE: prompts.SUMMARIZER_DESCRIPTIONS, agent.ROUTE: prompts.AGENT_DESCRIPTIONS},
                          owner=self.label)

        navigation.register(navigation.NavItem("hydration", "Memory updates", "hydration:home",
                                               permissions.can_use_memory, order=11))
        home.register_step(home.Step(
            "gmail", "Connect Gmail", "so the assistant learns from your mail and can draft replies",
            permissions.can_use_memory, selectors.gmail_connected, selectors.gmail_connect_url, order=10))
        home.register(home.Tile("memory", "hydration/home_tile.html", permissions.can_use_memory,
                                selectors.home_tile, order=20))
        schedules.register(schedules.Periodic(
            name="hydration.dispatch_due", task="hydration.tasks.dispatch_due", every_seconds=60,
            description="Starts the hydration run of every team and user memory whose 12-hour slot came "
                        "(each file system has its own slot, so runs spread over the interval).",
        ))
        schedules.register(schedules.Periodic(
            name="hydration.schedules_backfill", task="hydration.tasks.schedules_backfill", every_seconds=3600,
            description="Gives a schedule slot to any file system created without one (bulk imports); "
                        "new file systems get theirs when created.",
        ))
        schedules.register(schedules.Periodic(
            name="hydration.recover", task="hydration.tasks.recover",
            every_seconds=settings.HYDRATION_RECOVER_EVERY_SECONDS, previous_every=(30,),
            description="Queues again each running hydration whose worker's heartbeat went quiet (a worker "
                        "killed whole would otherwise hold its run until the broker's 1 h visibility timeout).",
        ))
        core_demo.register_seeder(90, demo.seed)
