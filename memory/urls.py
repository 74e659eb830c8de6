from django.urls import path

from . import history_views, views

app_name = "memory"

urlpatterns = [
    path("", views.home, name="home"),
    path("context/", views.context_view, name="context"),
    path("<int:fs_id>/", views.tree, name="tree"),
    path("<int:fs_id>/files/<path:path>", views.file_view, name="file"),
    path("<int:fs_id>/new", views.file_new, name="new"),
    path("<int:fs_id>/edit/<path:path>", views.file_edit, name="edit"),
    path("<int:fs_id>/preview", views.preview, name="preview"),
    path("<int:fs_id>/move/<path:path>", views.file_move, name="move"),
    path("<int:fs_id>/delete/<path:path>", views.file_delete, name="delete"),
    path("<int:fs_id>/history/<path:path>", views.file_history, name="file-history"),
    path("<int:fs_id>/revisions/", views.revision_list, name="revisions"),
    path("<int:fs_id>/revisions/<int:revision_id>/", views.revision_detail, name="revision"),
    path("<int:fs_id>/revisions/<int:revision_id>/revert", views.revision_revert, name="revert"),
    path("<int:fs_id>/changes/<int:change_id>/restore", views.change_restore, name="restore"),
    path("<int:fs_id>/changes/<int:change_id>/revert", history_views.change_revert, name="change-revert"),
    path("<int:fs_id>/settings", views.settings_view, name="settings"),
    path("<int:fs_id>/export.zip", views.export_zip, name="export"),
    path("<int:fs_id>/import", views.import_zip, name="import"),
]
