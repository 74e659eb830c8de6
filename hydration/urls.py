from django.urls import path

from . import views

app_name = "hydration"

urlpatterns = [
    path("", views.home, name="home"),
    path("<int:fs_id>/", views.filesystem, name="filesystem"),
    path("<int:fs_id>/sources/<str:source>", views.source_toggle, name="source-toggle"),
    path("<int:fs_id>/run", views.run_now, name="run-now"),
    path("<int:fs_id>/revisions/<int:revision_id>/why", views.revision_why, name="revision-why"),
    path("<int:fs_id>/why/<path:path>", views.file_why, name="file-why"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("gmail/connect", views.gmail_connect, name="gmail-connect"),
    path("gmail/callback", views.gmail_callback, name="gmail-callback"),
    path("gmail/disconnect", views.gmail_disconnect, name="gmail-disconnect"),
    path("gmail/actions-off", views.gmail_actions_off, name="gmail-actions-off"),
]
