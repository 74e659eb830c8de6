"""schemathesis over /api/openapi.json as a signed-in member: no input makes the API answer 5xx.

Runs against the WSGI application in this process (no server to start), inside the test's
database transaction, so whatever the generated requests create is rolled back. A bounded number
of examples per operation keeps it to about a minute.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from lindy import services
from lindy.wsgi import application
from memory import services as memory_services

# A deeper run: LINDY_FUZZ_EXAMPLES=200 pytest tests/lindy/test_api_fuzz.py
EXAMPLES_PER_OPERATION = int(os.environ.get("LINDY_FUZZ_EXAMPLES", 15))


@pytest.fixture
def _keep_test_connection():
    """The WSGI handler closes the database connection after each request, which would end the
    test's transaction; Django's test Client disconnects the same receivers."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def member_token(cast) -> str:
    # A member with things to read: their team's memory exists, so ids in paths can hit rows.
    memory_services.filesystem_for_team(cast.team)
    return services.api_token_create(user=cast.member)[1]


def _strategy(operation):
    """Valid requests and invalid ones (out-of-range numbers, wrong types, missing fields): a 4xx
    for the second kind is fine, a 5xx for either is not."""
    modes = [operation.as_strategy(GenerationMode.POSITIVE)]
    try:
        modes.append(operation.as_strategy(GenerationMode.NEGATIVE))
    except Exception:  # noqa: S110 - an operation with nothing to make invalid
        pass
    return st.one_of(modes)


def _fuzz(operation, headers: dict, failures: list) -> None:
    @given(case=_strategy(operation))
    @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
    def run(case):
        # Each example in its own savepoint, rolled back: examples don't see each other's rows,
        # and a database error in one doesn't abort the test's transaction for the rest.
        with transaction.atomic():
            response = case.call(headers=headers)
            transaction.set_rollback(True)
        try:
            case.validate_response(response, checks=[not_a_server_error], headers=headers)
        except BaseException as exc:  # recorded, so one run lists every operation that fails
            failures.append(f"{operation.label}: {response.status_code}\n{str(exc)[:3000]}")
            raise

    try:
        run()
    except BaseException:  # noqa: S110 - the failure is in `failures`, reported below
        pass


@pytest.mark.django_db
def test_no_input_makes_the_api_answer_5xx(member_token, _keep_test_connection):
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", application)
    headers = {"Authorization": f"Bearer {member_token}"}
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 30
    for operation in operations:
        _fuzz(operation, headers, failures)
    assert not failures, "\n\n".join(failures)
