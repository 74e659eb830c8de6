from django.urls import path

from . import views

app_name = "router"

urlpatterns = [
    path("", views.routes, name="routes"),
    path("routes/<str:name>/", views.route_detail, name="route"),
    path("routes/<str:name>/baseline/", views.route_baseline, name="route-baseline"),
    path("routes/<str:name>/variants/", views.route_variant_add, name="route-variant-add"),
    path("routes/<str:name>/rollouts/", views.rollout_start, name="rollout-start"),
    path("routes/<str:name>/evals/", views.eval_start, name="eval-start"),
    path("rollouts/<int:rollout_id>/", views.rollout_detail, name="rollout"),
    path("rollouts/<int:rollout_id>/stages/", views.rollout_stages, name="rollout-stages"),
    path("rollouts/<int:rollout_id>/<slug:action>/", views.rollout_action, name="rollout-action"),
    path("evals/<int:run_id>/", views.eval_run_detail, name="eval-run"),
    path("routes/<str:name>/optimizations/", views.optimization_start, name="optimization-start"),
    path("optimizations/<int:run_id>/", views.optimization_detail, name="optimization"),
    path("targets/", views.targets, name="targets"),
    path("targets/new/", views.target_create, name="target-create"),
    path("providers/new/", views.provider_create, name="provider-create"),
    path("providers/<slug:name>/", views.provider_edit, name="provider-edit"),
    path("budgets/", views.budgets, name="budgets"),
    path("budgets/routes/<str:name>/", views.route_concurrency, name="route-concurrency"),
    path("costs/", views.costs, name="costs"),
    path("my-model/", views.my_model, name="my-model"),
]
