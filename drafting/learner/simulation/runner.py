"""`manage.py learner_simulate`: the real pipeline against simulated users, on a simulated clock.

What is real: the drafting step itself (drafting.services.inbound.draft_inbound: the rules, the
call on route email.draft with the user's current drafting.md through the router, recorded with
its replayable request, the draft saved through the outbox), the pairs (drafting.services.pair_create: the
same cleaning, similarity and thresholds as production), the adaptive cadence
(learner_due, checked every simulated hour), the learner (learner.propose, replays, the judge
twice per comparison, the sign test) and the memory revisions it writes. All of it on the offline
provider, so anyone can run it with no network.

What is simulated: the people (drafting.learner.simulation.users) and Gmail. A simulated user's
inbound mail is read by the drafting step from a simulated mailbox that answers in Gmail's
shapes (SimulatedGmail), and what they send is paired with the draft as the sent-mail step would.

Everything happens inside one transaction that is rolled back at the end (unless `keep`), so
a simulation leaves nothing behind."""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import time_machine
from django.db import transaction
from django.test.utils import override_settings
from django.utils import timezone

from lindy.models import Membership, Team, User

from ...models import Draft, DraftPair, Proposal
from ...services import inbound as inbound_service
from ...services.context import context_read, context_write
from ...services.pairs import pair_create
from .. import selectors, services
from .users import Inbound, SimUser, make_users

START = datetime(2026, 3, 2, 7, 0, tzinfo=UTC)  # a Monday
INBOUND_HOUR = 8
SEND_HOURS = (10, 12, 14, 16)
LAST_HOUR = 20


class _Rollback(Exception):
    pass


@dataclass
class Day:
    day: int
    drafts: int
    pairs: int
    heavy: int

    def as_dict(self) -> dict:
        return {"day": self.day, "drafts": self.drafts,
                "heavy_edit_rate": round(self.heavy / self.pairs, 3) if self.pairs else None}


_ids = itertools.count(1)


class SimulatedGmail:
    """The simulated user's mailbox, answering the two reads the drafting step makes
    (`messages/{id}` and `threads/{id}`, format=full) in Gmail's shapes: headers, a base64url
    text/plain body, labels, internalDate."""

    def __init__(self, message: dict):
        self.message = message

    def get(self, path: str, params=None) -> dict:
        if path == f"messages/{self.message['id']}":
            return self.message
        if path == f"threads/{self.message['threadId']}":
            return {"id": self.message["threadId"], "messages": [self.message]}
        raise ValueError(f"The simulated mailbox has no {path}.")

    def close(self) -> None:
        pass


def _gmail_message(*, message_id: str, thread_id: str, user: User, inbound: Inbound) -> dict:
    headers = {"From": inbound.sender, "To": user.email, "Subject": inbound.subject,
               "Message-ID": f"<{message_id}@sim.test>"}
    if not inbound.needs_reply:
        headers["List-Unsubscribe"] = "<mailto:unsubscribe@vendor.test>"
    body = base64.urlsafe_b64encode(inbound.body.encode()).decode().rstrip("=")
    return {"id": message_id, "threadId": thread_id, "labelIds": ["INBOX"],
            "internalDate": str(int(timezone.now().timestamp() * 1000)),
            "payload": {"mimeType": "text/plain", "headers": [{"name": k, "value": v} for k, v in headers.items()],
                        "body": {"data": body}}}


def _draft_inbound(user: User, team: Team, sim: SimUser, inbound: Inbound, tag: str) -> Draft:
    """The product's drafting step (drafting.services.inbound.draft_inbound) on one inbound email,
    read from the simulated mailbox instead of Gmail."""
    n = next(_ids)
    message_id, thread_id = f"sim-{tag}-{n}", f"sim-thread-{tag}-{n}"
    draft = Draft.objects.create(user=user, team=team, gmail_message_id=message_id, inbound_subject=inbound.subject,
                                 inbound_at=timezone.now())
    gmail = SimulatedGmail(_gmail_message(message_id=message_id, thread_id=thread_id, user=user, inbound=inbound))
    inbound_service.draft_inbound(draft=draft, user=user, team=team, gmail=gmail)
    draft.refresh_from_db()
    return draft


def simulate(*, users: int, days: int, seed: int, mails_per_day: int = 8, keep: bool = False,
             log=None) -> dict:
    result: dict = {}

    def say(text: str) -> None:
        if log:
            log(text)

    try:
        with override_settings(MODEL_OFFLINE=True), time_machine.travel(START, tick=False) as clock, \
                transaction.atomic():
            tag = f"{seed}-{int(datetime.now(tz=UTC).timestamp())}"
            team = Team.objects.create(name=f"Learner simulation {tag}")
            sims = make_users(users, seed)
            people: list[tuple[SimUser, User]] = []
            for sim in sims:
                user = User.objects.create_user(email=f"{sim.first.lower()}.{tag}@{sim.domain}", name=sim.name)
                Membership.objects.create(team=team, user=user, role=Membership.Role.ADMIN)
                context_write(user=user, text=sim.stale_context(), author="system",
                              reason="Simulation: the onboarding snapshot (stale by design).")
                people.append((sim, user))
            days_out = []
            for day in range(1, days + 1):
                base = START + timedelta(days=day - 1)
                todays: list[tuple[SimUser, User, Inbound, Draft]] = []
                drafted = pairs = heavy = 0
                for hour in range(INBOUND_HOUR, LAST_HOUR + 1):
                    clock.move_to(base.replace(hour=hour))
                    if hour == INBOUND_HOUR:
                        for sim, user in people:
                            for inbound in sim.inbound_for_day(day, mails_per_day):
                                draft = _draft_inbound(user, team, sim, inbound, tag)
                                if draft.drafted:
                                    drafted += 1
                                    todays.append((sim, user, inbound, draft))
                    if hour in SEND_HOURS:
                        share = todays[: max(1, len(todays) // (len(SEND_HOURS) - SEND_HOURS.index(hour)))]
                        todays = todays[len(share):]
                        for sim, _user, inbound, draft in share:
                            sent = sim.reply(day=day, inbound=inbound, draft=draft.body)
                            pair = pair_create(draft=draft, sent_message_id=f"sent-{draft.gmail_message_id}",
                                               sent_body=sent, sent_at=timezone.now())
                            pairs += 1
                            heavy += pair.heavy_edit
                    for user_id, trigger in services.learner_due(now=timezone.now()):
                        user = User.objects.get(pk=user_id)
                        if not user.memberships.filter(team=team).exists():
                            continue  # a real user's pairs: not this simulation's business
                        run = services.learner_run(user=user, trigger=trigger, now=timezone.now())
                        say(f"day {day} {hour:02d}:00 {user.email}: {run.get_outcome_display()} — {run.message}")
                days_out.append(Day(day, drafted, pairs, heavy))
                say(f"day {day}: {drafted} drafts, {pairs} pairs, {heavy} heavily edited")
            proposals = Proposal.objects.filter(team=team, kind=Proposal.Kind.EDIT)
            agreement = selectors.swap_agreement(proposals)
            audit = [row.figures() for row in selectors.judge_audit(None, proposals=proposals)]
            for row in audit:
                say(f"judge audit {row['judge']}: {row['comparisons']} comparisons, swap agreement "
                    f"{row['swap_agreement']} (95% interval {row['swap_interval']}), longer draft picked against "
                    f"closeness {row['longer_against_closeness']} of {row['length_votes']} votes (95% interval "
                    f"{row['longer_against_interval']}), length bias {row['length_bias']}, flags: "
                    f"{'; '.join(row['flags']) or 'none'}")
            result = {
                "days": [d.as_dict() for d in days_out],
                "accepted": proposals.filter(status=Proposal.Status.ACCEPTED).count(),
                "rejected": proposals.filter(status=Proposal.Status.REJECTED).count(),
                "judge_swap_agreement": round(agreement, 3) if agreement is not None else None,
                "judge_audit": audit,
            }
            if log:
                for sim, user in people:
                    say(f"--- {user.email}: final drafting.md ---\n{context_read(user).text}")
                    say(f"(hidden truth on the last day: {_truth_text(sim, days)})")
            if not keep:
                raise _Rollback
    except _Rollback:
        pass
    return result


def _truth_text(sim: SimUser, day: int) -> str:
    truth = sim.truth(day)
    return (f"greeting {truth['greeting']!r}, sign-off {truth['sign_off']!r}, contacts "
            + ", ".join(f"{c.name} ({c.role})" for c in truth["contacts"]))


__all__ = ["DraftPair", "simulate"]
