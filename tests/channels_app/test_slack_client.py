"""One Slack WebClient factory (lindy.slack_client) with one timeout policy, used by the Bolt
app and by the Slack hydration source."""

from __future__ import annotations


def test_one_slack_client_factory_with_one_timeout(settings):
    from lindy.slack_client import web_client

    settings.SLACK_API_BASE_URL = "http://127.0.0.1:9/api/"
    settings.SLACK_HTTP_TIMEOUT = 7
    client = web_client("xoxb-1")
    assert (client.token, client.base_url, client.timeout) == ("xoxb-1", "http://127.0.0.1:9/api/", 7)
    assert web_client().token is None


def test_the_bolt_app_and_hydration_use_the_factory(settings):
    from channels_app import slack_app
    from hydration.sources.slack import client_for

    settings.SLACK_API_BASE_URL = "http://127.0.0.1:9/api/"
    settings.SLACK_HTTP_TIMEOUT = 4
    settings.SLACK_SIGNING_SECRET, settings.SLACK_CLIENT_ID, settings.SLACK_CLIENT_SECRET = "s", "c", "cs"
    bolt_client = slack_app.handler().app.client
    assert (bolt_client.base_url, bolt_client.timeout) == ("http://127.0.0.1:9/api/", 4)
    hydration_client = client_for("xoxb-2")
    assert (hydration_client.token, hydration_client.timeout) == ("xoxb-2", 4)
    assert hydration_client.retry_handlers  # hydration keeps its own rate-limit retries


def test_the_default_timeout_is_fifteen_seconds(settings):
    import os

    if "SLACK_HTTP_TIMEOUT" not in os.environ:
        assert settings.SLACK_HTTP_TIMEOUT == 15
