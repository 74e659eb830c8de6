"""Bounded input: every list in the API takes `limit` 1..100 and `offset` 0..100,000 from one
helper (lindy.pagination) and answers 422 JSON beyond, never a 500."""

from __future__ import annotations

import pytest

from lindy.pagination import MAX_LIMIT, MAX_OFFSET
from memory import services as memory_services

pytestmark = pytest.mark.django_db

LISTS = ["/api/tasks", "/api/meetings", "/api/validator/decisions", "/api/validator/outbox"]
OUT_OF_RANGE = [
    {"limit": str(10**20)}, {"offset": str(10**20)}, {"limit": "1e20"}, {"offset": "1e20"},
    {"limit": MAX_LIMIT + 1}, {"offset": MAX_OFFSET + 1}, {"limit": 0}, {"offset": -1}, {"limit": -5},
]


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize("params", OUT_OF_RANGE, ids=lambda p: "&".join(f"{k}={v}" for k, v in p.items()))
def test_lists_refuse_out_of_range_pages_with_422(cast, api_for, path, params):
    response = api_for(cast.member).get(path, **params)
    assert response.status_code == 422, (path, params, response.content[:300])
    error = response.json()["error"]
    name = next(iter(params))
    assert name in error["message"], error  # the message names the parameter at fault


@pytest.mark.parametrize("path", LISTS)
def test_lists_serve_the_largest_allowed_page(cast, api_for, path):
    response = api_for(cast.member).get(path, limit=MAX_LIMIT, offset=MAX_OFFSET)
    assert response.status_code == 200, response.content[:300]
    assert response.json()["items"] == []


def test_hydration_and_memory_lists_share_the_bounds(cast, api_for):
    fs = memory_services.filesystem_for_team(cast.team)
    api = api_for(cast.admin)
    for path in (f"/api/hydration/filesystems/{fs.pk}/runs", f"/api/memory/filesystems/{fs.pk}/revisions"):
        assert api.get(path, limit=MAX_LIMIT).status_code == 200, path
        assert api.get(path, offset=MAX_OFFSET).status_code == 200, path
        assert api.get(path, limit=MAX_LIMIT + 1).status_code == 422, path
        assert api.get(path, offset=MAX_OFFSET + 1).status_code == 422, path


def test_every_paginated_operation_documents_the_same_bounds(db):
    from lindy.api_root import api

    schema = api.get_openapi_schema()
    seen = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            params = {p["name"]: p for p in operation.get("parameters", []) if p.get("in") == "query"}
            if "limit" not in params and "offset" not in params:
                continue
            seen.append(f"{method.upper()} {path}")
            assert params["limit"]["schema"].get("maximum") == MAX_LIMIT, (path, params["limit"])
            assert params["limit"]["schema"].get("minimum") == 1, path
            assert params["offset"]["schema"].get("maximum") == MAX_OFFSET, (path, params["offset"])
            assert params["offset"]["schema"].get("minimum") == 0, path
    assert len(seen) >= 7, seen
