"""The hooks between apps are registries filled in AppConfig.ready (lindy.seams), never dotted
paths in settings; a test swaps one for the length of a block and gets the registered one back."""

from django.conf import settings

from agent import services as agent_services
from channels_app.services import user_message_send
from lindy import seams
from tests.seams import replaced
from tests.validator.helpers import FAILING


def test_the_agent_and_channels_fill_the_seams_in_their_ready():
    """The agent takes inbound bundles, channels send its messages to the user; no setting names them."""
    assert seams.inbound_handler() is agent_services.handle_inbound
    assert seams.user_message_sender() is user_message_send
    assert not hasattr(settings, "LINDY_INBOUND_HANDLER") and not hasattr(settings, "LINDY_USER_MESSAGE_SENDER")


def test_a_swapped_seam_is_restored_after_the_block():
    with replaced(user_message_sender=FAILING):
        assert seams.user_message_sender() is FAILING
        assert seams.inbound_handler() is agent_services.handle_inbound
    assert seams.user_message_sender() is user_message_send


def test_the_seam_fixture_swaps_until_the_test_ends(seam):
    seam.user_message_sender = "tests.validator.helpers.failing_user_message"
    assert seams.user_message_sender() is FAILING


def test_after_the_fixture_the_registered_sender_is_back():
    assert seams.user_message_sender() is user_message_send


def test_an_unregistered_hook_says_so(monkeypatch):
    monkeypatch.setattr(seams, "_hooks", {})
    try:
        seams.inbound_handler()
    except seams.NotRegistered as exc:
        assert "inbound_handler" in str(exc)
    else:
        raise AssertionError("an unregistered hook was returned")
