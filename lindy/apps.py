from django.apps import AppConfig


class LindyConfig(AppConfig):
    name = "lindy"
    verbose_name = "Lindy core"

    def ready(self):
        from django.db.models.signals import post_migrate

        from . import home, navigation, permissions, schedules  # noqa: F401 (home registers the core's tiles)

        post_migrate.connect(schedules.sync_on_migrate, sender=self)

        from django_structlog.signals import bind_extra_request_finished_metadata

        from . import structured_logs

        bind_extra_request_finished_metadata.connect(structured_logs.bind_route)
        navigation.register(navigation.NavItem("tasks", "Tasks", "task-list", permissions.can_use_workspace, order=60))
        navigation.register(
            navigation.NavItem("meetings", "Meetings", "meeting-list", permissions.can_use_workspace, order=61)
        )
        navigation.register(navigation.NavItem("audit", "Audit", "audit-log", permissions.can_view_audit, order=98))
        navigation.register(navigation.NavItem("admin", "Admin", "admin:index", permissions.is_superuser, order=99))
