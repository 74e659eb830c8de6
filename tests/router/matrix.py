from router.services import evals, rollouts
from tests.role_matrix import SUPERUSER_PAGE, TEAM_ADMIN_PAGE, Case, api, page
from tests.router.helpers import cheap_target, route, variant


def rollout_id(cast) -> int:
    agent = route("agent")
    variant(agent, "default")
    return rollouts.rollout_start(route=agent, candidate=cheap_target(), actor=cast.superuser,
                                  override_reason="The agent route has no offline eval set yet.").pk


def eval_run_id(cast) -> int:
    return evals.eval_run_create(route=route("validator"), target=cheap_target()).pk


def optimization_id(cast) -> int:
    from router.services import optimize

    return optimize.optimization_run_create(route=route("validator"), target=cheap_target(), budget_usd="1").pk


# Superusers manage routing: everyone else gets 404 (POSTs without a valid form get 400 or a redirect).
MANAGER_POST = page(404, superuser=400)
ROLLOUT_API = api(403, superuser=200)

CASES = [
    # The product's routing is for superusers; team admins are sent to their own team's model use.
    # Usage and routing are numbers, not bodies: a support user who administers a team sees its usage.
    Case("router/", "GET", "/router/", page(404, admin=302, outsider=302, superuser=200, support_admin=302)),
    Case("router/costs/", "GET", "/router/costs/", {**TEAM_ADMIN_PAGE, "support_admin": 200}),
    Case("router/my-model/", "GET", "/router/my-model/", page(200, support=404, support_admin=200)),
    Case("router/targets/", "GET", "/router/targets/", SUPERUSER_PAGE),
    Case("router/targets/new/", "POST", "/router/targets/new/", MANAGER_POST, json=False),
    Case("router/providers/new/", "POST", "/router/providers/new/", MANAGER_POST, json=False),
    Case("router/providers/<slug:name>/", "GET", lambda cast: f"/router/providers/{cheap_target().host.name}/",
         SUPERUSER_PAGE),
    Case("router/providers/<slug:name>/", "POST", lambda cast: f"/router/providers/{cheap_target().host.name}/",
         MANAGER_POST, json=False),
    Case("router/budgets/", "GET", "/router/budgets/", SUPERUSER_PAGE),
    Case("router/budgets/", "POST", "/router/budgets/", MANAGER_POST, json=False),
    Case("router/budgets/routes/<str:name>/", "POST", "/router/budgets/routes/agent/", MANAGER_POST, json=False),
    Case("router/routes/<str:name>/", "GET", "/router/routes/agent/", SUPERUSER_PAGE),
    Case("router/routes/<str:name>/baseline/", "POST", "/router/routes/agent/baseline/", MANAGER_POST, json=False),
    Case("router/routes/<str:name>/variants/", "POST", "/router/routes/agent/variants/", MANAGER_POST, json=False),
    Case("router/routes/<str:name>/rollouts/", "POST", "/router/routes/agent/rollouts/", MANAGER_POST, json=False),
    Case("router/routes/<str:name>/evals/", "POST", "/router/routes/validator/evals/", MANAGER_POST, json=False),
    Case("router/rollouts/<int:rollout_id>/", "GET", lambda cast: f"/router/rollouts/{rollout_id(cast)}/", SUPERUSER_PAGE),
    Case("router/rollouts/<int:rollout_id>/stages/", "POST", lambda cast: f"/router/rollouts/{rollout_id(cast)}/stages/",
         MANAGER_POST, json=False),
    Case("router/rollouts/<int:rollout_id>/<slug:action>/", "POST",
         lambda cast: f"/router/rollouts/{rollout_id(cast)}/pause/", page(404, superuser=302), json=False),
    Case("router/evals/<int:run_id>/", "GET", lambda cast: f"/router/evals/{eval_run_id(cast)}/", SUPERUSER_PAGE),
    Case("router/routes/<str:name>/optimizations/", "POST", "/router/routes/validator/optimizations/", MANAGER_POST,
         json=False),
    Case("router/optimizations/<int:run_id>/", "GET", lambda cast: f"/router/optimizations/{optimization_id(cast)}/",
         SUPERUSER_PAGE),
    Case("api/router/routes", "GET", "/api/router/routes",
         api(404, admin=200, outsider=200, superuser=200, support_admin=200)),
    Case("api/router/routes/<route>/assignment", "GET",
         lambda cast: f"/api/router/routes/agent/assignment?user_id={cast.member.pk}", api(404, member=200, superuser=200)),
    Case("api/router/calls/<call_id>/scores", "POST", "/api/router/calls/999999/scores", api(404),
         body={"metric": "validator.blocked", "value": 1}),
    # The rollout API: superusers (or their tokens) only, everyone else 403.
    Case("api/router/routes/<route>", "GET", "/api/router/routes/agent", ROLLOUT_API),
    # No offline evidence for the agent route (it has no eval set): 409 for the superuser.
    Case("api/router/routes/<route>/rollouts", "POST", "/api/router/routes/agent/rollouts",
         api(403, superuser=409), body={"target": "offline-rules"}),
    Case("api/router/rollouts/<rollout_id>/pause", "POST",
         lambda cast: f"/api/router/rollouts/{rollout_id(cast)}/pause", ROLLOUT_API, body={"reason": "matrix"}),
    # A running rollout cannot resume: 409 for the superuser, after the permission check.
    Case("api/router/rollouts/<rollout_id>/resume", "POST",
         lambda cast: f"/api/router/rollouts/{rollout_id(cast)}/resume", api(403, superuser=409)),
    Case("api/router/rollouts/<rollout_id>/rollback", "POST",
         lambda cast: f"/api/router/rollouts/{rollout_id(cast)}/rollback", ROLLOUT_API),
    Case("api/router/rollouts/<rollout_id>/complete", "POST",
         lambda cast: f"/api/router/rollouts/{rollout_id(cast)}/complete", ROLLOUT_API),
    Case("api/router/targets", "GET", "/api/router/targets", ROLLOUT_API),
    Case("api/router/routes/<route>/evals", "POST", "/api/router/routes/validator/evals", api(403, superuser=201),
         body={"target": "offline-rules", "variant": "default"}),
    Case("api/router/evals", "GET", "/api/router/evals?route=validator", ROLLOUT_API),
    Case("api/router/evals/<run_id>", "GET", lambda cast: f"/api/router/evals/{eval_run_id(cast)}", ROLLOUT_API),
]
