"""The first minute (issue 35, part 7): the login page says what Lindy is and offers a password
reset that really resets (Django's views, the email through the configured backend); home shows a
checklist whose steps are done by doing them (Gmail's OAuth against the fake Google, a signed text
webhook, a signed Slack event), each one click from home, and which leaves once all are done; the
navigation says what each page is for; a person sets the name the product shows for them."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core import mail
from django.test import Client, override_settings

from lindy.models import AuditEntry, User
from tests.channels_app.factories import SendingNumberFactory, SlackInstallationFactory
from tests.conftest import client_for
from tests.factories import AgentTaskFactory
from tests.fakes.gmail_api import FakeGmail
from tests.fakes.linq import FakeLinq, message_received, signed
from tests.fakes.slack_api import FakeSlack, member_joined, signed_event
from tests.seams import replaced

pytestmark = pytest.mark.django_db


def _steps(html: str) -> dict[str, str]:
    return dict(re.findall(r'data-step="([^"]+)" data-done="(yes|no)"', html))


def _step_link(html: str, key: str) -> str:
    return re.search(rf'data-step="{key}" data-done="no">\s*<a href="([^"]+)"', html).group(1)


# --- Sign in ----------------------------------------------------------------------------------

def test_the_login_page_says_what_lindy_is_and_offers_a_reset():
    html = Client().get("/accounts/login/").content.decode()
    tagline = re.search(r"<p data-tagline>(.*?)</p>", html, re.S).group(1)
    assert tagline.startswith("Lindy is your team's assistant")
    assert 'href="/accounts/password-reset/"' in html and "Forgot your password?" in html


def test_a_forgotten_password_is_reset_by_the_emailed_link(cast, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    client = Client()
    form = client.get("/accounts/password-reset/")
    assert form.status_code == 200 and "Reset your password" in form.content.decode()

    sent = client.post("/accounts/password-reset/", {"email": "MEMBER@acme.example"}, follow=True)
    assert sent.redirect_chain[-1][0] == "/accounts/password-reset/sent/"
    assert "data-reset-sent" in sent.content.decode()
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == [cast.member.email] and message.subject == "Reset your Lindy password"
    assert message.from_email == settings.DEFAULT_FROM_EMAIL
    link = re.search(r"http://testserver(/accounts/reset/\S+/)", message.body).group(1)

    # Django's confirm view swaps the token for a session-held one, then takes the new password.
    form = client.get(link, follow=True)
    assert "Choose a new password" in form.content.decode()
    done = client.post(form.redirect_chain[-1][0], {"new_password1": "a-new-long-pass-35",
                                                     "new_password2": "a-new-long-pass-35"}, follow=True)
    assert done.redirect_chain[-1][0] == "/accounts/reset/done/" and "data-reset-complete" in done.content.decode()
    assert Client().login(username=cast.member.email, password="a-new-long-pass-35")
    # The link worked once.
    assert "data-reset-invalid" in Client().get(link, follow=True).content.decode()

    # An unknown address is answered the same way (no account is revealed) and sends nothing.
    other = Client().post("/accounts/password-reset/", {"email": "nobody@nowhere.example"})
    assert other.status_code == 302 and other["Location"] == "/accounts/password-reset/sent/"
    assert len(mail.outbox) == 1


# --- The checklist ----------------------------------------------------------------------------

@pytest.fixture
def gmail():
    with FakeGmail(page_size=2) as fake, override_settings(**fake.settings()):
        yield fake


@pytest.fixture
def linq():
    with FakeLinq() as fake, override_settings(**fake.settings()), \
            replaced(inbound_handler="tests.channels_app.recorder.record_in_process"):
        yield fake


@pytest.fixture
def slack(monkeypatch):
    from celery import current_app

    from lindy import queue as lindy_queue

    # The events endpoint stores the event and queues its processing: run it here, as a worker would.
    monkeypatch.setattr(lindy_queue, "enqueue",
                        lambda name, *args, countdown=None: current_app.tasks[name].apply(args=args).get())
    with FakeSlack() as fake, override_settings(**fake.settings()):
        yield fake


def test_the_checklist_is_done_by_doing_each_step_and_then_leaves(
        cast, gmail, linq, slack, django_capture_on_commit_callbacks):
    member = client_for(cast.member)
    html = member.get("/").content.decode()
    assert _steps(html) == {"gmail": "no", "text": "no", "slack": "no"}

    # 1. Connect Gmail: one click to the Gmail panel of the member's memory, then Google's consent.
    link = _step_link(html, "gmail")
    assert link == f"/hydration/{cast.member.memory_filesystem.pk}/#gmail"
    page = member.get(link).content.decode()
    assert 'id="gmail"' in page and 'action="/hydration/gmail/connect"' in page
    consent = member.post("/hydration/gmail/connect")
    state = parse_qs(urlsplit(consent["Location"]).query)["state"][0]
    assert member.get("/hydration/gmail/callback", {"state": state, "code": "good-code"}).status_code == 302
    assert _steps(member.get("/").content.decode()) == {"gmail": "yes", "text": "no", "slack": "no"}

    # 2. Text your number: the texting page takes the phone, then a signed text arrives from it.
    link = _step_link(member.get("/").content.decode(), "text")
    assert link == "/channels/texting/"
    line = SendingNumberFactory(phone="+14155550100")
    assert member.post(link, {"phone": "+16505550001"}).status_code == 302
    body, headers = signed(message_received(sender="+16505550001", line=line.phone, text="hello"))
    assert Client().post("/channels/imessage/webhook", body, content_type="application/json", **headers).status_code == 200
    # Another person's text does not tick the member's step.
    assert _steps(client_for(cast.admin).get("/").content.decode())["text"] == "no"
    assert _steps(member.get("/").content.decode()) == {"gmail": "yes", "text": "yes", "slack": "no"}

    # 3. Add the assistant to a Slack channel: the Channels page's Slack section; Slack tells us it joined.
    html = member.get("/").content.decode()
    link = _step_link(html, "slack")
    assert link == "/channels/#slack"
    howto = member.get("/channels/").content.decode()
    assert 'id="slack"' in howto and "/invite @Lindy" in howto and "data-slack-not-installed" in howto
    SlackInstallationFactory(team=cast.team)
    slack.add_channel("C0PUBLIC01", "general", private=False)
    body, headers = signed_event(member_joined("C0PUBLIC01"))
    with django_capture_on_commit_callbacks(execute=True):
        assert Client().post("/slack/events", body, content_type="application/json", **headers).status_code == 200

    # All three done: the checklist is gone for the member; the team's admin shares the Slack step only.
    html = member.get("/").content.decode()
    assert "data-checklist" not in html and _steps(html) == {}
    assert _steps(client_for(cast.admin).get("/").content.decode()) == {"gmail": "no", "text": "no", "slack": "yes"}
    # Another team's admin is not ticked by Acme's channel.
    assert _steps(client_for(cast.other_admin).get("/").content.decode())["slack"] == "no"


def test_no_checklist_for_whoever_has_no_step(cast):
    for user in (cast.support, cast.superuser):
        assert "data-checklist" not in client_for(user).get("/").content.decode()


# --- Words ------------------------------------------------------------------------------------

def test_navigation_says_what_each_page_is_for(cast):
    html = client_for(cast.member).get("/").content.decode()
    labels = dict(re.findall(r'data-nav="([^"]+)"[^>]*>([^<]+)', html))
    assert labels["hydration"] == "Memory updates" and labels["learner"] == "Draft learning"
    assert labels["my-model"] == "Model choice"
    assert not {"Hydration", "Context learner", "My model"} & set(labels.values())
    # The URLs are contracts: unchanged.
    assert 'href="/hydration/" data-nav="hydration"' in html and 'href="/drafting/learner/" data-nav="learner"' in html


def test_a_person_sets_the_name_the_product_shows(cast):
    User.objects.filter(pk=cast.member.pk).update(name="")
    client = client_for(cast.member)
    assert ">member</a>" in client.get("/").content.decode()  # no name yet: the email's first part
    page = client.get("/accounts/profile/")
    assert page.status_code == 200 and 'name="name"' in page.content.decode()

    saved = client.post("/accounts/profile/", {"name": "  Umar   User "}, follow=True)
    assert saved.redirect_chain[-1][0] == "/accounts/profile/"
    assert "Saved. You appear as Umar User." in saved.content.decode()
    assert User.objects.get(pk=cast.member.pk).name == "Umar User"
    home = client.get("/").content.decode()
    assert ">Umar User</a>" in home and "Umar User:" in home
    # Wherever a page names the person: the name, the email in a tooltip.
    AgentTaskFactory(team=cast.team, owner=cast.member, title="Quarterly numbers")
    tasks = client.get("/tasks/").content.decode()
    assert f'<span class="person" title="{cast.member.email}">Umar User</span>' in tasks
    entry = AuditEntry.objects.get(action="user.display_name_set")
    assert entry.actor == cast.member and entry.after == {"name": "Umar User"}

    # Too long: refused with a message, nothing changed.
    refused = client.post("/accounts/profile/", {"name": "x" * 151})
    assert refused.status_code == 400 and "at most 150 characters" in refused.content.decode()
    assert User.objects.get(pk=cast.member.pk).name == "Umar User"
