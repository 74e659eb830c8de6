from django.apps import AppConfig


class ChannelsAppConfig(AppConfig):
    name = "channels_app"
    verbose_name = "Channels"

    def ready(self):
        from lindy import metrics as core_metrics

        from . import metrics

        core_metrics.register("channels_app", metrics.collect)  # its lindy_* figures on /metrics
        from django.urls import reverse

        from lindy import demo as core_demo
        from lindy import erasure, home, navigation, ops_alerts, schedules, seams
        from router.routing import register_route

        # Register the Celery tasks in every process (web too): services queue them by name.
        from . import (
            demo,
            permissions,
            selectors,
            tasks,  # noqa: F401
        )
        from .services.erasure import user_texts_erase
        from .services.media import TRANSCRIBE_ROUTE
        from .services.outbound import user_message_send

        erasure.register("channels.inbound_messages", user_texts_erase)
        # Hydration reads the Slack channels switched on for memory through this provider.
        seams.register_slack_channels(for_team=selectors.memory_feeds_for_team, for_user=selectors.memory_feeds_for_user)
        # The agent's messages to a user themself go out through this sender.
        seams.register_user_message_sender(user_message_send)
        # Other apps' operational alerts (the validator's block rates) go to the same people and channel.
        from .services.alerts import email_support, post_to_ops_slack

        ops_alerts.register("email", email_support)
        ops_alerts.register("slack", post_to_ops_slack)

        # Speech to text: no prompt to vary, so only the default variant (router.variants).
        register_route(TRANSCRIBE_ROUTE, owner=self.label, user_facing=False, label="Voice memo transcription",
                       description="Transcribes voice memos users text in (OpenAI-compatible /audio/transcriptions).")
        navigation.register(navigation.NavItem("channels", "Channels", "channels", permissions.can_view_channels, order=30))
        navigation.register(
            navigation.NavItem("channel-health", "Channel health", "channel-health",
                               permissions.can_view_channel_health, order=51)
        )
        # The first-minute checklist on the home page (lindy.home.Step): each done from these records.
        home.register_step(home.Step(
            "text", "Text your Lindy number", "save its contact card and send it a first message",
            permissions.can_text_assistant, selectors.has_texted, lambda user: reverse("channels-texting"), order=20))
        home.register_step(home.Step(
            "slack", "Add the assistant to a Slack channel", "invite it to a channel whose talk it should remember",
            permissions.can_use_workspace, selectors.assistant_in_slack_channel,
            lambda user: reverse("channels") + "#slack", order=30))
        home.register(home.Tile("channel-health", "channels_app/home_tile.html", permissions.can_view_channel_health,
                                selectors.home_tile, order=10))
        schedules.register(schedules.Periodic(
            name="channels.ratio_alerts", task="channels_app.tasks.ratio_alerts_check", every_seconds=900,
            description="Raises an alert record when a sending number's send/receive ratio crosses a threshold.",
        ))
        schedules.register(schedules.Periodic(
            name="channels.debounce_recover", task="channels_app.tasks.debounce_recover", every_seconds=60,
            description="Re-queues debounce windows and bundles a dead worker left behind.",
        ))
        schedules.register(schedules.Periodic(
            name="channels.slack_events_recover", task="channels_app.tasks.slack_events_recover", every_seconds=60,
            description="Queues Slack events still waiting to be processed (a lost task, a dead worker).",
        ))
        core_demo.register_seeder(40, demo.seed)
