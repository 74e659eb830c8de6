"""Every query string is input (issue 29, part 5): every page and every API GET, asked with
oversized, negative and garbage numbers in every query parameter it may read, answers 2xx, 3xx
or 4xx, never a server error. Pages come from the URL resolver, API reads from the OpenAPI document."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from lindy.bounded import BadParameter, clamped_int, query_choice, query_int
from tests.conftest import ApiClient, client_for
from tests.crawl import api_get_paths, api_query_params, page_paths

HOSTILE = ["2147483648", "9223372036854775808", "9" * 40, "-2147483649", "²", "1e309", "nan", "\u0661"]
# The pages' crawl sends every parameter at once: three values cover too large, negative and not ASCII.
PAGE_HOSTILE = ["9" * 40, "-2147483649", "²"]
# The query names the product's pages read (grep request.GET): every one gets every hostile value.
class _AnyId(dict):
    """Every path parameter is 1: whether the object exists, the query string is read first or not at all."""

    def __contains__(self, key):
        return True

    def __getitem__(self, key):
        return 1

    def get(self, key, default=None):
        return 1


PAGE_QUERY_NAMES = ["page", "cpage", "days", "team", "line", "matrix", "show", "status", "period", "view", "dir",
                    "q", "route", "part", "state", "code", "error"]


def test_the_helpers():
    assert clamped_int("2147483648", low=0, high=100, default=0) == 100
    assert clamped_int("-5", low=0, high=100, default=7) == 7  # not digits: the default
    assert clamped_int("\u0661", low=0, high=100, default=0) == 0
    assert query_int({"n": "5"}, "n", low=1, high=9, default=1) == 5
    with pytest.raises(BadParameter, match="n: must be from 1 to 9"):
        query_int({"n": "2147483648"}, "n", low=1, high=9, default=1)
    with pytest.raises(BadParameter, match="whole number"):
        query_int({"n": "²"}, "n", low=1, high=9, default=1)
    with pytest.raises(BadParameter, match="one of a, b"):
        query_choice({"s": "c"}, "s", allowed={"a", "b"}, default="a")


def test_an_out_of_range_team_on_the_charts_page_is_400_naming_it(cast):
    response = client_for(cast.admin).get("/drafting/charts/?team=²")
    assert response.status_code == 400 and b"team" in response.content
    assert client_for(cast.admin).get("/drafting/charts/?team=2147483648").status_code == 400


@pytest.mark.parametrize("role", ["member", "admin", "superuser"])
def test_every_page_survives_hostile_query_values(cast, role):
    client = client_for(getattr(cast, role))
    found = page_paths(_AnyId())
    errors = []
    for _pattern, path in found.paths:
        for value in PAGE_HOSTILE:
            url = f"{path}?{urlencode(dict.fromkeys(PAGE_QUERY_NAMES, value))}"
            status = client.get(url).status_code
            if status >= 500:
                errors.append(f"{url[:120]} -> {status}")
    assert not errors, errors[:10]


@pytest.mark.parametrize("role", ["member", "admin"])
def test_every_api_get_survives_oversized_integer_query_values(cast, role):
    api = ApiClient(getattr(cast, role))
    errors = []
    for spec_path, path in api_get_paths(_AnyId()).paths:
        params = api_query_params(spec_path)
        for value in HOSTILE:
            query = {name: value for name, _kind in params}
            status = api.client.get(path, query).status_code
            if status >= 500:
                errors.append(f"{path} {query} -> {status}")
    assert not errors, errors[:10]
