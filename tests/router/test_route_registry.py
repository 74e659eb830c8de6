"""Routes come from the apps that call them, not from a list in the router."""

import pytest

from router import routing
from router.models import Route


def test_owners_register_their_routes():
    routes = routing.registered_routes()
    assert routes["memory.summarize"].owner == "hydration" and routes["memory.agent"].owner == "hydration"
    assert routes["router.online_eval"].owner == "router"
    assert routes["email.draft"].owner == "drafting"
    assert all(routes[r].owner == "drafting" for r in ("learner.init", "learner.propose", "learner.judge"))


def test_a_route_has_one_owner():
    routing.register_route("memory.agent", owner="hydration", description="again, same owner: fine")
    with pytest.raises(ValueError, match="already registered by 'hydration'"):
        routing.register_route("memory.agent", owner="validator", description="")


@pytest.mark.django_db
def test_ensure_defaults_creates_the_registered_routes_only():
    routing.register_route("test.only", owner="tests", description="A test's route.")
    routing.ensure_defaults()
    names = set(Route.objects.values_list("name", flat=True))
    assert names == set(routing.registered_routes())
    assert Route.objects.get(name="test.only").variants.filter(name="default").exists()
