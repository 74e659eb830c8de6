from django.apps import AppConfig


class RouterConfig(AppConfig):
    name = "router"
    verbose_name = "Model router"

    def ready(self):
        from django.db.models.signals import post_migrate

        from . import routing, signals  # noqa: F401  (cache invalidation)

        post_migrate.connect(routing.ensure_defaults_on_migrate, sender=self)
