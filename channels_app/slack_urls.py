"""Slack's fixed paths, at the site root (they are registered in the Slack app's settings)."""

from django.urls import path

from . import views

urlpatterns = [
    path("slack/install", views.slack_install, name="slack-install"),
    path("slack/oauth_redirect", views.slack_oauth_redirect, name="slack-oauth-redirect"),
    path("slack/events", views.slack_events, name="slack-events"),
]
