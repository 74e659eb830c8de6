import pytest

from router import offline, routing, variants


@pytest.fixture
def offline_rule():
    """Register an offline rule for a route for one test, then put back whatever was there."""
    saved = dict(offline._POLICIES)

    def register(route, func):
        offline._POLICIES[route] = func

    yield register
    offline._POLICIES.clear()
    offline._POLICIES.update(saved)


@pytest.fixture(autouse=True)
def route_registry():
    """Routes and prompt variants a test registers (tests.router.helpers) are forgotten after it."""
    saved, saved_variants = dict(routing._ROUTES), dict(variants._VARIANTS)
    yield
    routing._ROUTES.clear()
    routing._ROUTES.update(saved)
    variants._VARIANTS.clear()
    variants._VARIANTS.update(saved_variants)
