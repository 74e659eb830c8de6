"""schemathesis over the router's operations as a superuser, who gets past the permission check
that answers everyone else 403: no input makes the rollout API answer 5xx. The member's run over
the whole API is tests/lindy/test_api_fuzz.py; this reuses its machinery."""

from __future__ import annotations

import pytest
import schemathesis

from lindy import services
from lindy.wsgi import application
from tests.lindy.test_api_fuzz import _fuzz, _keep_test_connection  # noqa: F401 - a fixture

from .helpers import cheap_target, offline_evidence, route, variant


@pytest.mark.django_db
def test_no_input_makes_the_rollout_api_answer_5xx(cast, _keep_test_connection):  # noqa: F811
    email = route("email.draft")
    variant(email, "flash-tuned")
    offline_evidence(email, cheap_target(), "flash-tuned")  # so generated starts can get past the 409 too
    headers = {"Authorization": f"Bearer {services.api_token_create(user=cast.superuser)[1]}"}
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", application)
    operations = [op for result in schema.get_all_operations() if "/api/router/" in (op := result.ok()).label]
    assert len(operations) >= 12
    failures: list[str] = []
    for operation in operations:
        _fuzz(operation, headers, failures)
    assert not failures, "\n\n".join(failures)
