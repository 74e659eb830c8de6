from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import metrics, views
from .api_root import api

# Rendered without the request: an error page must not depend on what may have failed.
handler500 = "lindy.views.server_error"

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Forgot password: Django's own views; the email goes out through the configured EMAIL_BACKEND.
    path("accounts/password-reset/", auth_views.PasswordResetView.as_view(), name="password_reset"),
    path("accounts/password-reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("accounts/reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(),
         name="password_reset_confirm"),
    path("accounts/reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("accounts/profile/", views.profile, name="profile"),
    path("tasks/", views.task_list, name="task-list"),
    path("tasks/<int:task_id>/", views.task_detail, name="task-detail"),
    path("meetings/", views.meeting_list, name="meeting-list"),
    path("meetings/<int:meeting_id>/", views.meeting_detail, name="meeting-detail"),
    path("audit/", views.audit_log, name="audit-log"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("api/", api.urls),
    path("admin/", admin.site.urls),
    path("memory/", include("memory.urls")),
    path("validator/", include("validator.urls")),
    path("validator/", include("agent.urls")),
    path("router/", include("router.urls")),
    path("analyst/", include("analyst.urls")),
    path("hydration/", include("hydration.urls")),
    path("drafting/learner/", include("drafting.learner.urls")),
    path("channels/", include("channels_app.urls")),
    path("drafting/", include("drafting.urls")),
    path("", include("channels_app.slack_urls")),
]
