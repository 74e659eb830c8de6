from django.apps import AppConfig


class GoogleWorkspaceConfig(AppConfig):
    name = "google_workspace"
    verbose_name = "Google connection"
