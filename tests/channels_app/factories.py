import factory
from django.utils import timezone

from channels_app.models import Channel, SendingNumber, SlackChannel, SlackInstallation, TextingProfile
from tests.fakes import slack_api


class SendingNumberFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SendingNumber

    phone = factory.Sequence(lambda n: f"+1415555{n:04d}")
    label = factory.Sequence(lambda n: f"Line {n}")
    kind = Channel.IMESSAGE
    daily_cap = 100


class TextingProfileFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TextingProfile

    phone = factory.Sequence(lambda n: f"+1650555{n:04d}")
    first_texted_at = factory.LazyFunction(timezone.now)


class SlackInstallationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SlackInstallation

    client_id = slack_api.CLIENT_ID
    slack_team_id = slack_api.TEAM_ID
    slack_team_name = "Test Workspace"
    bot_token = slack_api.BOT_TOKEN
    bot_user_id = slack_api.BOT_USER_ID
    bot_id = "B0LINDY"
    user_id = "U0INSTALLR"


class SlackChannelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SlackChannel

    slack_team_id = slack_api.TEAM_ID
    channel_id = factory.Sequence(lambda n: f"C{n:09d}")
    name = factory.Sequence(lambda n: f"channel-{n}")
