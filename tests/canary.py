"""The canary crawl (issue 29, part 3): plant a unique marker in every text field of a member's
private records, then read every page (from the URL resolver) and every API GET (from the OpenAPI
document) as people who may not read them. A marker found names the page and the field it came from.

`plant(cast)` builds the member's private world through the product's services and factories, then
stamps every free-text field of every row it created (TextFields, content-bearing CharFields, the
string leaves of JSON fields) with `CANARY<n>`; `crawl(client, fill, canaries)` returns the leaks.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from django.apps import apps
from django.db import models
from django.test import Client

from tests.crawl import api_get_paths, page_paths

MARKER = re.compile(r"CANARY\d{6}")
# Every product app: a model added to any of them is planted or explained below.
APPS = ("lindy", "memory", "validator", "drafting", "analyst", "channels_app", "hydration", "agent", "router")
SHORTEST = 16  # a marker needs 13 characters; a column shorter than this holds a code, not a sentence

# Text fields that are not the member's words: machine identifiers, hashes, encrypted tokens and
# names the product must read back to work (a stamped one would break the page, not test it).
NOT_STAMPED = {
    "lindy.User.password": "a password hash",
    "lindy.ApiToken.key_hash": "the token's hash: a stamped one cannot sign in",
    "lindy.ApiToken.prefix": "the token's public prefix",
    "memory.MemoryFile.path": "the file's name is planted as a marker itself (people/CANARYnnnnnn.md)",
    "memory.MemoryFile.folder": "derived from the path",
    "memory.FileChange.path": "the path, planted as a marker in the file's name",
    "memory.FileChange.old_path": "the path, planted as a marker in the file's name",
    "hydration.GmailAccount.access_token": "an encrypted token, shown to nobody",
    "hydration.GmailAccount.refresh_token": "an encrypted token, shown to nobody",
    "channels_app.SlackInstallation.bot_token": "an encrypted token, shown to nobody",
    "channels_app.SlackInstallation.bot_refresh_token": "an encrypted token, shown to nobody",
    "channels_app.SlackInstallation.user_token": "an encrypted token, shown to nobody",
    "drafting.Draft.context_sha256": "a hash",
    "validator.Decision.tool": "a tool's name from the product's registry, looked up when read",
    "validator.EvalCandidate.tool": "a tool's name from the product's registry, looked up when read",
    "agent.OutboxEntry.tool": "a tool's name from the product's registry, looked up when read",
    "lindy.TaskEvent.tool_name": "a tool's name from the product's registry, looked up when read",
    # The product's own names (routes, providers, model targets, prompt variants, code locations,
    # versions): usage and failure counts per name are the admin's to watch; nothing a member wrote.
    "router.ModelCall.route": "a route's name", "router.ModelCall.provider": "a provider's name",
    "router.ModelCall.model": "a model's name", "router.ModelCall.prompt_variant": "a prompt variant's name",
    "router.ModelChoice.route": "a route's name",
    "analyst.ScoredCall.route": "a route's name", "analyst.ScoredCall.target": "a model target's name",
    "analyst.TaskScore.provider": "a provider's name",
    "drafting.Proposal.proposer_target": "a model target's name",
    "drafting.Proposal.proposer_variant": "a prompt variant's name",
    "drafting.Comparison.judge_target": "a model target's name",
    "drafting.Comparison.judge_variant": "a prompt variant's name",
    "drafting.Draft.route": "a route's name", "drafting.Draft.target_name": "a model target's name",
    "drafting.Draft.prompt_variant": "a prompt variant's name",
    "analyst.FailureGroup.kind": "a kind of job", "analyst.FailureGroup.exc_type": "an exception class",
    "analyst.FailureGroup.culprit": "a function of the product's code",
    "analyst.FailureGroup.first_version": "a release", "analyst.FailureGroup.last_version": "a release",
    "analyst.FailureGroup.resolved_in_version": "a release",
    "analyst.FailureGroup.fingerprint": "a hash of the product's frames",
    "analyst.FailureGroup.issue_url": "the engineering issue staff filed",
    "analyst.FailureEvent.kind": "a kind of job", "analyst.FailureEvent.exc_type": "an exception class",
    "analyst.FailureEvent.version": "a release", "analyst.FailureEvent.route": "a route's name",
    "analyst.FailureEvent.target": "a model target's name",
    "analyst.FailureEvent.run": "a job's id (\"hydration run 5\")",
}

# Models whose rows are not a member's private records: who reads them is decided by other rules
# (configuration a superuser keeps, the team's own name, people's names shown to their teammates).
NOT_PRIVATE = {
    "lindy.User": "a person's name and email are shown to their teammates by design",
    "lindy.Team": "the team's name is shown to its members",
    "lindy.Membership": "a role, no text",
    "router.Provider": "a superuser's configuration",
    "router.ProviderBudget": "a superuser's configuration",
    "router.Target": "a superuser's configuration",
    "router.Route": "a superuser's configuration",
    "router.PromptVariant": "a superuser's configuration (prompt text written by staff)",
    "router.Rollout": "a superuser's configuration",
    "router.RolloutEvent": "a superuser's configuration",
    "lindy.AuditEntry": "who changed what a person or the assistant may do: settings and roles, never a body; a person's own switches are read by superusers only",
    "router.EvalRun": "a superuser's offline eval of a public suite",
    "router.EvalResult": "a superuser's offline eval of a public suite",
    "router.OptimizationRun": "a superuser's optimisation of a prompt on the public suite",
    "validator.EvalMatrix": "the validator's public eval suite",
    "validator.EvalCell": "the validator's public eval suite",
    "validator.BlockRateHour": "counts per tool (a tool's name is the product's, not the member's)",
    "validator.BlockRateAlert": "counts per tool (a tool's name is the product's, not the member's)",
    "validator.BlockRateAlertPush": "how an alert was pushed",
    "validator.DecisionDay": "counts per tool (a tool's name is the product's, not the member's)",
    "channels_app.SendingNumber": "the product's phone lines, support reads them",
    "channels_app.SlackInstallation": "the team's workspace, its admins connect it",
    "channels_app.SlackChannel": "a channel of the team's workspace: its admins choose which feed team memory",
    "channels_app.SlackOAuthState": "a nonce",
    "channels_app.WebhookEvent": "a provider's delivery id",
    "hydration.GmailOAuthState": "a nonce",
}


@dataclass
class Canaries:
    where: dict[str, str] = field(default_factory=dict)  # marker -> "app.Model.field #pk"
    _counter: itertools.count = field(default_factory=lambda: itertools.count(100000))

    def new(self, label: str) -> str:
        marker = f"CANARY{next(self._counter)}"
        self.where[marker] = label
        return marker


def _models():
    return [m for m in apps.get_models() if m._meta.app_label in APPS and not m._meta.proxy]


def label_of(model) -> str:
    return f"{model._meta.app_label}.{model.__name__}"


def high_water() -> dict[type, int]:
    """The largest pk of every model now: rows above it were created by `plant`."""
    marks = {}
    for model in _models():
        if isinstance(model._meta.pk, (models.AutoField, models.BigAutoField)):
            marks[model] = model.objects.aggregate(m=models.Max("pk"))["m"] or 0
    return marks


def _stampable(model, f) -> bool:
    if f.primary_key or f.choices or f"{label_of(model)}.{f.name}" in NOT_STAMPED:
        return False
    if isinstance(f, models.JSONField):
        return True
    if isinstance(f, models.TextField):
        return True
    return isinstance(f, models.CharField) and (f.max_length or 0) >= SHORTEST


def stampable_fields(model) -> list:
    return [f for f in model._meta.concrete_fields if _stampable(model, f)]


def unplanted(since: dict[type, int]) -> list[str]:
    """Models with text a member's private record could hold, of which `plant` made no row."""
    return sorted(label_of(model) for model, mark in since.items()
                  if label_of(model) not in NOT_PRIVATE and stampable_fields(model)
                  and not model.objects.filter(pk__gt=mark).exists())


def _stamp_json(value, marker: str):
    if isinstance(value, str):
        return f"{value} {marker}"
    if isinstance(value, list):
        return [_stamp_json(v, marker) for v in value]
    if isinstance(value, dict):
        return {k: _stamp_json(v, marker) for k, v in value.items()}
    return value


def stamp_new_rows(since: dict[type, int], canaries: Canaries, *, skip: set[str] = frozenset()) -> int:
    """Put a marker in every stampable field of every row created after `since`."""
    stamped = 0
    for model, mark in since.items():
        label = label_of(model)
        if label in skip:
            continue
        fields = stampable_fields(model)
        if not fields:
            continue
        for row in model.objects.filter(pk__gt=mark):
            changes = {}
            for f in fields:
                marker = canaries.new(f"{label}.{f.name} #{row.pk}")
                value = getattr(row, f.attname)
                if isinstance(f, models.JSONField):
                    changes[f.attname] = _stamp_json(value, marker) if value else {"canary": marker}
                elif isinstance(f, models.TextField):
                    changes[f.attname] = f"{value or ''} {marker}".strip()
                else:
                    changes[f.attname] = f"{(value or '')[: (f.max_length or 0) - 13]} {marker}".strip()
            model.objects.filter(pk=row.pk).update(**changes)
            stamped += len(changes)
    return stamped


def crawl(client: Client, fill: dict, canaries: Canaries, *, api_client: Client | None = None) -> tuple[list[str], list[str]]:
    """Every page and every API GET; returns (leaks as "page: field", pages visited)."""
    leaks, visited = [], []
    pages = [(client, path) for _pattern, path in page_paths(fill).paths]
    reads = [(api_client or client, path) for _pattern, path in api_get_paths(fill).paths]
    for reader, path in pages + reads:
        visited.append(path)
        response = reader.get(path)
        # A page that fails hides what it would print: a server error is a finding too.
        if response.status_code >= 500:
            leaks.append(f"{path}: server error {response.status_code}")
        body = response.content.decode(errors="replace")
        leaks += [f"{path}: {canaries.where.get(m, m)}" for m in sorted(set(MARKER.findall(body)))]
    return leaks, visited


def plant(cast) -> tuple[Canaries, dict]:
    """The member's private world, every text field stamped; returns the markers and the values that
    fill each URL's path parameters. Fails when a model that can hold a member's text got no row,
    so a new model is planted (or explained in NOT_PRIVATE) before the crawl can pass."""
    from datetime import timedelta

    from django.utils import timezone

    from agent.models import OpenTask, OutboxEntry
    from analyst.models import ScoredCall, TaskScore
    from channels_app.models import (
        Conversation,
        InboundAttachment,
        InboundBundle,
        InboundMessage,
        OptOut,
        OutboundMessage,
        RatioAlert,
        SlackChannelShare,
        SlackEvent,
        WebhookEvent,
    )
    from drafting.models import Comparison, ContextInit, HistoryBlob, LearnerRun, Proposal, SentMail
    from google_workspace.models import GmailAccount
    from hydration.models import Fact, FileSource, Item, Run, SourceState
    from lindy import failures
    from lindy import services as lindy_services
    from lindy.models import AgentTask
    from memory import services as memory_services
    from router.models import CallSample, CallScore, ModelCall, ModelChoice
    from tests.channels_app.factories import (
        SendingNumberFactory,
        SlackChannelFactory,
        SlackInstallationFactory,
        TextingProfileFactory,
    )
    from tests.drafting.factories import draft, pair
    from tests.factories import MeetingFactory
    from tests.memory.factories import write_linked
    from tests.validator.test_views import blocked_payment
    from validator import eval_candidates
    from validator import services as validator_services

    member, team, now = cast.member, cast.team, timezone.now()
    canaries = Canaries()
    since = high_water()
    # The validator, the agent and the analyst: a private task, its decisions, the outbox, scores.
    decision = blocked_payment(cast)
    task = decision.task
    AgentTask.objects.filter(pk=task.pk).update(visibility="private")
    authorized = validator_services.decision_authorize(decision_id=blocked_payment(cast).pk, user=member)
    candidate = eval_candidates.candidate_propose(decision=authorized, user=member, expected="allow")
    analyst_candidate = eval_candidates.candidate_draft(decision=decision, expected="block", why="A rogue payment.")
    OutboxEntry.objects.create(team=team, user=member, task=authorized.task, decision=authorized, tool="pay_invoice",
                               arguments={"invoice_id": "NW-1"}, adapter="offline", status="failed",
                               response={"detail": "declined"}, error="Card declined.", execution_key=f"k{authorized.pk}")
    OpenTask.objects.create(user=member, task=task, channel="imessage-channel", conversation_ref="conversation-ref-1")
    call = ModelCall.objects.create(user=member, team=team, route="analyst-route", provider="offline-provider",
                                    model="offline-model-name", error="The model call failed.")
    CallSample.objects.create(call=call, request={"messages": [{"role": "user", "content": "Pay it."}]},
                              response={"content": "Paid."})
    from tests.router.helpers import cheap_target

    ModelChoice.objects.create(user=member, route="drafting", target=cheap_target())
    CallScore.objects.create(call=call, metric="did-what-asked", value=0.5, source="analyst-judge")
    score = TaskScore.objects.create(team=team, task=task, from_seq=1, through_seq=2, score=0.4, did_what_asked=0.5,
                                     summary="It paid.", error="The analyst call failed.", blocked_reasons=["paid"],
                                     false_claims=["said it paid"], stopped="stopped-early", provider="offline-rules")
    ScoredCall.objects.create(task_score=score, call=call, route="analyst-route", target="offline-target-name")
    try:
        raise RuntimeError("Could not pay invoice NW-1 for the member")
    except RuntimeError as exc:
        failures.capture(exc, kind="agent_run", route="agent", target="offline-rules", task_id=task.pk,
                         user_id=member.pk, team_id=team.pk, log=[{"event": "paying NW-1"}])
    lindy_services.api_token_create(user=member, name="member's laptop token")
    # Drafting and the learner.
    mail = draft(member, team)
    sent = pair(member, team, sent="Hi Jane,\n\nFriday is fine.\n\nThanks")
    SentMail.objects.create(user=member, gmail_message_id="sent-mail-1", gmail_thread_id="sent-thread-1",
                            note="Sent outside the assistant.")
    blob = HistoryBlob.objects.create(user=member, team=team, threads=[{"subject": "Renewal", "body": "Friday?"}])
    run = LearnerRun.objects.create(user=member, team=team, trigger="manual", started_at=now, message="Ran the learner.")
    proposal = Proposal.objects.create(user=member, team=team, run=run, created_at=now, base_context="old",
                                       proposed_context="new", diff="-old\n+new", summary="s", decision_reason="r",
                                       proposer_target="offline-target-name", proposer_variant="default-variant")
    proposal.proposed_from.add(sent)
    ContextInit.objects.create(user=member, team=team, blob=blob, proposal=proposal, lease_task_id="worker-1",
                               error="The first context failed.")
    Comparison.objects.create(proposal=proposal, pair=sent, outcome="win", created_at=now, sent="The sent mail.",
                              old_draft="The old draft.", new_draft="The new draft.", first_vote="new",
                              second_vote="new", judge_target="offline-target-name", judge_variant="default-variant")
    # Memory, hydration and its sources.
    fs = memory_services.filesystem_for_user(member)
    path = f"people/{canaries.new('memory.MemoryFile.path')}.md"
    revision = write_linked(fs, {path: "A private note.\n"}, author=member, author_kind="person")
    hydration_run = Run.objects.create(filesystem=fs, trigger="manual", triggered_by=member, revision=revision,
                                       status="failed", stage="writing memory", error="The memory agent failed.",
                                       agent_message="Wrote the note.", sources={"gmail": {"status": "error", "error": "Gmail said no."}},
                                       violations=["too long"])
    item = Item.objects.create(filesystem=fs, source="gmail", external_id="item-1", author="jane@initech.test",
                               author_kind="external", author_name="Jane Park", title="Renewal terms",
                               reference="https://mail.example/item-1", text="The renewal is due Friday.",
                               occurred_at=now - timedelta(hours=1), fetched_by=hydration_run,
                               processed_by=hydration_run, processed_note="Taken in.")
    Fact.objects.create(run=hydration_run, position=0, kind="fact", text="Renewal due Friday.")
    FileSource.objects.create(run=hydration_run, path=path, item=item)
    SourceState.objects.update_or_create(filesystem=fs, source="gmail",
                                         defaults={"last_error": "Gmail said no.", "cursor": {"history_id": "77"}})
    GmailAccount.objects.create(user=member, email="member@acme.example", scopes="gmail.readonly",
                                status_detail="Connected as the member.")
    meeting = MeetingFactory(team=team, owner=member, public=False)
    # Channels: texting, Slack, alerts.
    number = SendingNumberFactory()
    profile = TextingProfileFactory(user=member, number=number, chat_id="chat-guid-member")
    conversation = Conversation.objects.create(profile=profile)
    bundle = InboundBundle.objects.create(conversation=conversation, status="failed", error="The agent gave up.")
    message = InboundMessage.objects.create(channel="imessage", provider_id="msg-1", from_phone=profile.phone,
                                            number=number, profile=profile, conversation=conversation, bundle=bundle,
                                            text="My door code is 4412.", reaction={"emoji": "heart"})
    InboundAttachment.objects.create(message=message, filename="memo.m4a", mime_type="audio/mp4",
                                     source_url="https://files.example/memo", stored_path="var/media/memo.m4a",
                                     transcript="Call the bank.", transcription_error="Partly heard.")
    OutboundMessage.objects.create(user=member, profile=profile, number=number, channel="imessage", status="failed",
                                   provider_id="out-1", body="Your code is saved.", error="Provider refused.")
    OptOut.objects.create(phone=profile.phone, channel="sms", profile=profile, number=number, keyword="STOP")
    RatioAlert.objects.create(number=number, day=now.date(), level="warn", ratio=3.0, sent=30, received=10,
                              threshold=2.5)
    WebhookEvent.objects.create(source="imessage", event_id="webhook-event-1", event_type="message.received")
    installation = SlackInstallationFactory(team=team)
    channel = SlackChannelFactory(team=team, installation=installation, name="member-private-channel")
    share = SlackChannelShare.objects.create(channel=channel, user=member, slack_user_id="U0MEMBER")
    SlackEvent.objects.create(event_id="Ev-member-1", slack_team_id=installation.slack_team_id, event_type="message",
                              body='{"event": {"text": "The merger closes Monday."}}', status="failed",
                              error="Could not process the message.", retry_reason="http_timeout")
    missing = unplanted(since)
    assert not missing, f"No canary planted for {missing}: plant a row in tests/canary.py, or say in NOT_PRIVATE why not"
    stamp_new_rows(since, canaries, skip=set(NOT_PRIVATE))
    # Rows of the superusers' pages, so every pattern is read with a real object (not stamped: not private).
    from analyst.models import FailureGroup
    from tests.router.matrix import eval_run_id, optimization_id, rollout_id

    group = FailureGroup.objects.order_by("-pk").first()
    fill = {"task_id": task.pk, "decision_id": decision.pk, "candidate_id": candidate.pk, "draft_id": mail.pk,
            "proposal_id": proposal.pk, "fs_id": fs.pk, "path": path, "revision_id": revision.pk,
            "meeting_id": meeting.pk, "pair_id": sent.pk, "name": "validator", "route": "validator",
            "source": "gmail", "change_id": revision.changes.values_list("pk", flat=True).first(),
            "run_id@hydration": hydration_run.pk, "group_id": group.pk, "channel_id": channel.pk,
            "share_id": share.pk, "alert_id": RatioAlert.objects.get(number=number).pk, "call_id": call.pk,
            "name@router/providers/": cheap_target().host.name, "action": "pause",
            "rollout_id": rollout_id(cast), "run_id@router/evals/": eval_run_id(cast),
            "run_id@/api/router/evals/": eval_run_id(cast), "run_id@router/optimizations/": optimization_id(cast),
            # The password-reset link's page, read with a link that no longer works (it holds no row).
            "uidb64": "MQ", "token": "used-link",
            # A resend is a POST; read with GET it answers 405 and shows nothing.
            "entry_id": OutboxEntry.objects.filter(user=member).values_list("pk", flat=True).first() or 1}
    assert analyst_candidate is not None
    return canaries, fill
