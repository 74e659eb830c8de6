from django.urls import path

from . import views
from .failures import views as failure_views

app_name = "analyst"
urlpatterns = [
    path("", views.page, name="page"),
    path("failures/", failure_views.failures_page, name="failures"),
    path("failures/<int:group_id>/", failure_views.failure_page, name="failure"),
    path("failures/<int:group_id>/issue.md", failure_views.failure_issue, name="failure-issue"),
    path("failures/<int:group_id>/status/", failure_views.failure_status, name="failure-status"),
    path("failures/<int:group_id>/triage/", failure_views.failure_triage, name="failure-triage"),
    path("failures/<int:group_id>/file/", failure_views.failure_file, name="failure-file"),
]
