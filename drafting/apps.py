from django.apps import AppConfig


class DraftingConfig(AppConfig):
    name = "drafting"
    verbose_name = "Email drafting"

    def ready(self):
        from django.conf import settings

        from lindy import home, navigation, schedules
        from router import variants
        from router.routing import register_route
        from router.services import register_metric, register_optimizable
        from router.services.evals import register_request_builder

        from . import evals, offline, permissions, prompts, selectors, signals, tasks  # noqa: F401  (offline rules, receivers, tasks)
        from .services.pairs import METRIC

        register_route(prompts.ROUTE, owner=self.label, label="Email drafts",
                       description="Drafts a reply in the user's Gmail thread from their context document.")
        variants.register({prompts.ROUTE: prompts.DESCRIPTIONS}, owner=self.label)
        # Its eval set holds drafting's own inputs and is built by its own prompt, so the score of
        # a variant (its own or one the optimizer stored) is the score of what users get.
        register_request_builder(prompts.ROUTE, evals.draft_eval_request, variants=lambda: prompts.VARIANTS)
        register_optimizable(prompts.ROUTE, components=evals.components)
        register_metric(METRIC, higher_is_better=False,
                        label="Draft heavily edited before sending (a draft-sent pair below the threshold)",
                        url_name="drafting-charts")
        navigation.register(navigation.NavItem("drafts", "Drafts", "drafting-list", permissions.can_view_drafts,
                                               order=30))
        home.register(home.Tile("heavy-edits", "drafting/home_tile.html", permissions.can_view_drafts,
                                selectors.heavy_edit_summary, order=40))
        schedules.register(schedules.Periodic(
            name="drafting.sweep", task="drafting.tasks.sweep", every_seconds=settings.LINDY_DRAFT_SWEEP_SECONDS,
            description="Gmail items hydration stored that drafting has not looked at yet (behind the signal).",
        ))

        from lindy import demo as core_demo

        from . import demo

        core_demo.register_seeder(99, demo.seed)

        from .learner import setup as learner_setup

        learner_setup.ready(self.label)
