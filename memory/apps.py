from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self):
        from lindy import demo as core_demo
        from lindy import navigation
        from router.routing import register_route

        from . import (
            demo,
            permissions,
            signals,  # noqa: F401  (connects the file-system creation receivers)
        )

        navigation.register(navigation.NavItem("memory", "Memory", "memory:home", permissions.can_use_memory, order=10))
        core_demo.register_seeder(10, demo.seed)
        # gateway.count_tokens' route: the verifier's budgets are memory's.
        register_route("memory.count_tokens", owner=self.label, user_facing=False, label="Memory token counting",
                       description="Counts the tokens of memory files against their budgets.")
