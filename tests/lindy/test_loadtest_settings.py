"""`make loadtest` runs the product's own settings plus the trivial view of `make bench`, the
baseline its page groups are compared with (loadtest/settings.py): nothing else may differ."""

import importlib

import pytest
from django.test.utils import override_settings

from lindy import settings as product
from tests.conftest import client_for


def test_the_load_tests_settings_are_the_products_but_for_the_urls():
    loadtest = importlib.import_module("loadtest.settings")
    names = {n for n in dir(product) if n.isupper()} | {n for n in dir(loadtest) if n.isupper()}
    differ = {n for n in names if getattr(product, n, None) != getattr(loadtest, n, None)}
    assert differ == {"ROOT_URLCONF"} and loadtest.ROOT_URLCONF == "bench.bench_urls"


@pytest.mark.django_db
def test_the_trivial_view_is_the_signed_in_layout_and_every_product_url_still_answers(cast):
    client = client_for(cast.member)
    with override_settings(ROOT_URLCONF="bench.bench_urls"):
        trivial = client.get("/bench/trivial/")
        assert trivial.status_code == 200 and b"Log out" in trivial.content  # the navigation every page shares
        assert client.get("/tasks/").status_code == 200
        assert client.get("/healthz").status_code == 200
