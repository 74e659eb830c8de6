from django.apps import AppConfig


class DraftingConfig(AppConfig):
    name = "drafting"
    verbose_name = "Email drafting"

    def ready(self):
        from . import offline  # noqa: F401  (the email.draft offline rules)
        from .learner import setup as learner_setup

        learner_setup.ready(self.label)
