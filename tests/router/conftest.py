import pytest

from router import offline


@pytest.fixture
def offline_rule():
    """Register an offline rule for a route for one test, then put back whatever was there."""
    saved = dict(offline._POLICIES)

    def register(route, func):
        offline._POLICIES[route] = func

    yield register
    offline._POLICIES.clear()
    offline._POLICIES.update(saved)
