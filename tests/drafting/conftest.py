import pytest
from django.test import override_settings

from tests.fakes.gmail_api import FakeGmail


@pytest.fixture
def google():
    with FakeGmail(page_size=50) as fake, override_settings(
        **fake.settings(), LINDY_ACTION_RETRY_BUDGET_SECONDS=4, LINDY_ACTION_MAX_TRIES=4,
    ):
        yield fake
