"""Bounded input: every list in the API takes `limit` 1..100 and `offset` 0..100,000 from one
helper (lindy.pagination) and answers 422 JSON beyond, never a 500."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from lindy import json_input
from lindy.models import AgentTask
from lindy.pagination import MAX_LIMIT, MAX_OFFSET
from memory import services as memory_services

pytestmark = pytest.mark.django_db

LISTS = ["/api/tasks", "/api/meetings", "/api/validator/decisions", "/api/validator/outbox", "/api/memory/filesystems"]
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
    for path in (f"/api/hydration/filesystems/{fs.pk}/runs", f"/api/memory/filesystems/{fs.pk}/revisions",
                 f"/api/memory/filesystems/{fs.pk}/files"):
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


@pytest.mark.parametrize("occurred_at, status", [
    ("0339-04-15T16:33:49+21:07", 201),  # an offset PostgreSQL refuses: stored as the same instant in UTC
    ("2026-01-01T00:00:00-23:59", 201),
    ("0001-01-01T00:00:00+01:00", 422),  # before year 1 in UTC
    ("9999-12-31T23:59:59-01:00", 422),  # after year 9999 in UTC
])
def test_meeting_times_with_any_offset_are_stored_or_refused_never_500(cast, api_for, occurred_at, status):
    response = api_for(cast.member).post("/api/meetings", {"title": "t", "occurred_at": occurred_at})
    assert response.status_code == status, response.content[:300]


@pytest.mark.parametrize("raw, depth", [
    (b"{}", 1), (b"[[]]", 2), (b'{"a": "[[[[{{{{"}', 1), (b'["\\"", [[1]]]', 3),
    (b'"no brackets"', 0), (b'{"a\\\\": ["]"]}', 2), (b"[" * 1000, 1000),
])
def test_nesting_depth_counts_brackets_outside_strings(raw, depth):
    assert json_input.nesting_depth(raw) == depth
    if raw.startswith(b"[" * 1000):
        return
    json.loads(raw)  # each sample is real JSON


def test_deep_json_is_400_before_parsing_and_changes_nothing(cast, api_for, monkeypatch):
    deep = '{"title": "x", "visibility": "private", "pad": ' + "[" * 200_000 + "]" * 200_000 + "}"
    api = api_for(cast.member)
    real_loads = json.loads
    calls = []
    monkeypatch.setattr("json.loads", lambda *a, **k: calls.append(1) or real_loads(*a, **k))
    response = api.post("/api/tasks", raw=deep)
    monkeypatch.undo()
    assert response.status_code == 400
    assert "nests deeper than 64" in response.json()["error"]["message"]
    assert not calls and not AgentTask.objects.exists()


def test_deep_json_under_another_content_type_is_still_refused(cast, api_for):
    deep = '{"title": "x", "pad": ' + "[" * 100 + "]" * 100 + "}"
    response = api_for(cast.member).client.post("/api/tasks", deep, content_type="text/plain")
    assert 400 <= response.status_code < 500
    assert not AgentTask.objects.exists()


def test_json_at_the_depth_bound_is_accepted(cast, api_for):
    nested = "[" * 62 + "]" * 62  # with the object around it: 63 levels
    response = api_for(cast.member).post("/api/tasks", raw='{"title": "x", "pad": ' + nested + "}")
    assert response.status_code == 201, response.content[:300]


def test_json_over_the_size_bound_is_413(cast, api_for, settings):
    settings.JSON_BODY_MAX_BYTES = 100_000
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000_000
    response = api_for(cast.member).post("/api/tasks", {"title": "x", "pad": "y" * 100_001})
    assert response.status_code == 413
    assert "larger than 100,000 bytes" in response.json()["error"]["message"]
    assert not AgentTask.objects.exists()


def test_a_non_numeric_content_length_is_400_not_500(cast):
    response = Client().generic("POST", "/api/tasks", b"{}", content_type="application/json", CONTENT_LENGTH="abc")
    assert response.status_code == 400


@pytest.mark.parametrize("path, body", [
    ("/api/meetings", {"title": "t", "occurred_at": "2026-01-01T00:00:00Z", "shared_with": ["a\x00@b.test"]}),
    ("/api/tasks", {"title": "nul\x00here"}),
])
def test_text_with_a_nul_character_is_400_not_a_database_error(cast, api_for, path, body):
    response = api_for(cast.member).post(path, body)
    assert response.status_code == 400, response.content[:300]
    assert "NUL" in response.json()["error"]["message"]
    assert not AgentTask.objects.exists()


def test_a_backslash_before_u0000_is_just_text(cast, api_for):
    response = api_for(cast.member).post("/api/tasks", {"title": "C:\\u0000 is a path"})
    assert response.status_code == 201, response.content[:300]
    assert AgentTask.objects.get().title == "C:\\u0000 is a path"


# Lists inside an object (and bare lists kept for their clients) take the same bounds: each list
# is one page, and the object says how many there are in all.
OBJECT_LISTS = [("/api/channels/slack", "admin"), ("/api/channels/health", "support"), ("/api/router/targets", "superuser")]


@pytest.mark.parametrize("path, who", OBJECT_LISTS)
@pytest.mark.parametrize("params", OUT_OF_RANGE, ids=lambda p: "&".join(f"{k}={v}" for k, v in p.items()))
def test_object_lists_refuse_out_of_range_pages_with_422(cast, api_for, path, who, params):
    response = api_for(getattr(cast, who)).get(path, **params)
    assert response.status_code == 422, (path, params, response.content[:300])
    assert next(iter(params)) in response.json()["error"]["message"]


@pytest.mark.parametrize("path, who", OBJECT_LISTS)
def test_object_lists_serve_the_largest_allowed_page(cast, api_for, path, who):
    response = api_for(getattr(cast, who)).get(path, limit=MAX_LIMIT, offset=MAX_OFFSET)
    assert response.status_code == 200, response.content[:300]


def test_slack_channels_are_one_page_with_their_counts(cast, api_for):
    from channels_app.models import SlackChannelShare
    from tests.channels_app.factories import SlackChannelFactory

    for name in ("alpha", "bravo", "charlie"):
        SlackChannelFactory(team=cast.team, name=name)
    for name in ("p-one", "p-two"):
        SlackChannelShare.objects.create(channel=SlackChannelFactory(team=cast.team, name=name, is_private=True),
                                         user=cast.admin)
    api = api_for(cast.admin)
    body = api.get("/api/channels/slack", limit=2).json()
    assert len(body["team_channels"]) == 2 and body["team_channels_count"] == 5
    assert len(body["shared_private_channels"]) == 2 and body["shared_private_channels_count"] == 2
    rest = api.get("/api/channels/slack", limit=2, offset=4).json()
    assert len(rest["team_channels"]) == 1 and rest["shared_private_channels"] == []


def test_channel_health_is_one_page_with_its_counts(cast, api_for):
    from django.utils import timezone

    from channels_app.models import NumberDay
    from tests.channels_app.factories import SendingNumberFactory

    for i in range(3):
        number = SendingNumberFactory(phone=f"+1312555010{i}")
        NumberDay.objects.create(number=number, day=timezone.localdate(), sent=50 + i, received=2)
    api = api_for(cast.support)
    body = api.get("/api/channels/health", limit=2).json()
    assert len(body["today"]) == 2 and body["today_count"] >= 3
    assert len(body["over_threshold_7d"]) == 2 and body["over_threshold_7d_count"] == 3
    assert body["over_threshold_7d"][0]["number"] == "+13125550102"  # worst first, across pages
    last = api.get("/api/channels/health", limit=2, offset=2).json()
    assert [row["number"] for row in last["over_threshold_7d"]] == ["+13125550100"]


def test_targets_list_is_bounded_and_stays_a_list(cast, api_for):
    api = api_for(cast.superuser)
    every = api.get("/api/router/targets").json()
    assert isinstance(every, list) and len(every) >= 2
    assert [t["name"] for t in api.get("/api/router/targets", limit=1, offset=1).json()] == [every[1]["name"]]
