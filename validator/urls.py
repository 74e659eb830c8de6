from django.urls import path

from . import views

urlpatterns = [
    path("", views.blocked_list, name="validator-blocked"),
    path("decisions/<int:decision_id>/", views.decision_detail, name="validator-decision"),
    path("decisions/<int:decision_id>/authorize/", views.decision_authorize, name="validator-authorize"),
    path("decisions/<int:decision_id>/dismiss/", views.decision_dismiss, name="validator-dismiss"),
    path("decisions/<int:decision_id>/follow/", views.decision_follow, name="validator-follow"),
    path("stats/", views.stats, name="validator-stats"),
]
