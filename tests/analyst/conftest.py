import pytest

from router import offline
from tests.validator.helpers import RECORDER, SENT


@pytest.fixture
def offline_rule():
    """Script a route's offline answers for one test (the model's behaviour, not the product's)."""
    saved = dict(offline._POLICIES)

    def register(route, func):
        offline._POLICIES[route] = func

    yield register
    offline._POLICIES.clear()
    offline._POLICIES.update(saved)


@pytest.fixture(autouse=True)
def recorder(seam):
    seam.user_message_sender = RECORDER
    SENT.clear()
    yield SENT
