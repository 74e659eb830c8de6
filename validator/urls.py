from django.urls import path

from . import views

urlpatterns = [
    path("", views.blocked_list, name="validator-blocked"),
    path("decisions/<int:decision_id>/", views.decision_detail, name="validator-decision"),
    path("decisions/<int:decision_id>/authorize/", views.decision_authorize, name="validator-authorize"),
    path("decisions/<int:decision_id>/dismiss/", views.decision_dismiss, name="validator-dismiss"),
    path("decisions/<int:decision_id>/follow/", views.decision_follow, name="validator-follow"),
    path("decisions/<int:decision_id>/propose-eval/", views.decision_propose_eval, name="validator-propose-eval"),
    path("stats/", views.stats, name="validator-stats"),
    path("cache/", views.cache_page, name="validator-cache"),
    path("evals/", views.eval_matrix_page, name="validator-evals"),
    path("evals/run/", views.eval_matrix_start, name="validator-evals-run"),
    path("evals/candidates/", views.eval_candidate_list, name="validator-eval-candidates"),
    path("evals/candidates/<int:candidate_id>/review/", views.eval_candidate_review,
         name="validator-eval-candidate-review"),
]
