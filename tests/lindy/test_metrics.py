"""/metrics: Prometheus text for an operator, readable only with the bearer token or from a configured
internal network; the product's lindy_* counters move when the product works (a hydration run, a
validation with its model call), computed from the records every process writes."""

import pytest
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from hydration import services as hydration
from tests.hydration.helpers import team_fs
from tests.validator.helpers import task_with
from validator import services as validator

pytestmark = pytest.mark.django_db

TOKEN = "metrics-secret-token"


def scrape() -> dict[tuple[str, tuple], float]:
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def matching(samples, name, **labels) -> float:
    """The sum over every label set that includes `labels`."""
    return sum(v for (n, got), v in samples.items() if n == name and set(labels.items()) <= set(got))


@override_settings(METRICS_TOKEN=TOKEN, METRICS_ALLOWED_NETWORKS=[])
def test_without_the_token_or_with_a_wrong_one_it_is_401():
    for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer nope"}, {"HTTP_AUTHORIZATION": TOKEN},
                    {"HTTP_AUTHORIZATION": f"Basic {TOKEN}"}):
        response = Client().get("/metrics", **headers)
        assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")
        assert b"lindy_" not in response.content


@override_settings(METRICS_TOKEN="", METRICS_ALLOWED_NETWORKS=[])
def test_no_token_configured_means_nobody_outside_the_networks_reads_it():
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401


@override_settings(METRICS_TOKEN="", METRICS_ALLOWED_NETWORKS=["10.0.0.0/8", "192.168.1.7"])
def test_a_configured_internal_address_reads_it_without_a_token():
    assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="192.168.1.7").get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="192.168.1.8").get("/metrics").status_code == 401
    assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 401


@override_settings(METRICS_TOKEN=TOKEN)
def test_requests_database_queues_and_budgets_are_reported():
    Client().get("/healthz")
    samples = scrape()
    names = {name for name, _ in samples}
    assert "django_http_requests_total_by_view_transport_method_total" in names
    assert any(name.startswith("django_db_execute") for name in names)
    assert "lindy_celery_queue_depth" in names
    for queue in ("channels", "agent", "hydration", "evals"):
        assert any(n == "lindy_celery_queue_depth" and dict(labels)["queue"].endswith(f".{queue}")
                   for n, labels in samples)
    assert "lindy_provider_budget_limit" in names
    # Every collector answered (one that raised would be logged and left out).
    for name in ("lindy_model_calls_total", "lindy_validator_decisions_total", "lindy_hydration_runs_total",
                 "lindy_hydration_run_duration_seconds_count", "lindy_debounce_delay_seconds_count"):
        assert any(n == name for n, _ in samples) or name == "lindy_model_calls_total", name


@override_settings(METRICS_TOKEN=TOKEN)
def test_counters_move_after_a_hydration_run_a_validation_and_a_model_call(cast):
    before = scrape()

    run = hydration.run_now_sync(filesystem=team_fs(cast.team), trigger="manual")
    task = task_with(cast.member, cast.team, [("user", "Email jane@initech.test the Q3 report.")])
    decision = validator.check(user=cast.member, team=cast.team, task=task, tool="send_email",
                               arguments={"to": ["jane@initech.test"], "subject": "Q3", "body": "Attached."},
                               justification='The user said "Email jane@initech.test the Q3 report."')
    assert decision.model_call_id, "the validation made a model call"

    after = scrape()
    assert value(after, "lindy_hydration_runs_total", status=run.status) == \
        value(before, "lindy_hydration_runs_total", status=run.status) + 1
    assert value(after, "lindy_hydration_run_duration_seconds_count") == \
        value(before, "lindy_hydration_run_duration_seconds_count") + 1
    verdict = "allowed" if decision.approved else "blocked"
    assert value(after, "lindy_validator_decisions_total", verdict=verdict) == \
        value(before, "lindy_validator_decisions_total", verdict=verdict) + 1
    from router.models import ModelCall

    call = ModelCall.objects.get(pk=decision.model_call_id)
    assert matching(after, "lindy_model_calls_total", route=call.route) == \
        matching(before, "lindy_model_calls_total", route=call.route) + 1
    assert matching(after, "lindy_model_tokens_total", route=call.route, kind="input") == \
        matching(before, "lindy_model_tokens_total", route=call.route, kind="input") + call.input_tokens
    assert call.input_tokens > 0
    target = call.target.name if call.target else call.model  # the offline rules have no Target row
    assert ("lindy_model_cost_usd_total", (("route", call.route), ("target", target))) in after


@override_settings(METRICS_TOKEN=TOKEN)
def test_a_post_is_refused():
    assert Client().post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 405


@override_settings(METRICS_TOKEN=TOKEN)
def test_the_debounce_delay_is_measured_from_the_last_message_to_the_claim(cast):
    from datetime import timedelta

    from django.utils import timezone

    from channels_app.models import Conversation, InboundBundle, InboundMessage, TextingProfile

    conversation = Conversation.objects.create(profile=TextingProfile.objects.create(user=cast.member, phone="+15550001"))
    start = timezone.now()
    bundle = InboundBundle.objects.create(conversation=conversation, heartbeat_at=start + timedelta(seconds=13.5))
    for n, at in enumerate((0, 10)):
        InboundMessage.objects.create(channel="imessage", provider_id=f"m{n}", from_phone="+15550001",
                                      conversation=conversation, bundle=bundle, received_at=start + timedelta(seconds=at))
    samples = scrape()
    assert value(samples, "lindy_debounce_delay_seconds_count") == 1
    assert value(samples, "lindy_debounce_delay_seconds_sum") == pytest.approx(3.5)
    assert value(samples, "lindy_debounce_delay_seconds_bucket", le="3.0") == 0
    assert value(samples, "lindy_debounce_delay_seconds_bucket", le="3.5") == 1
