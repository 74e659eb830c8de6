from django.urls import path

from . import views

urlpatterns = [
    path("", views.proposal_list, name="drafting-learner"),
    path("proposals/<int:proposal_id>/", views.proposal_detail, name="drafting-learner-proposal"),
    path("judge/", views.judge_audit, name="drafting-learner-judge"),
]
