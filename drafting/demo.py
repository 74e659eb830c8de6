"""Demo: two weeks of email for Umar (user@acme.test) and Ada (admin@acme.test), drafted, sent,
paired and learned from by the product's own code, so the drafts page, the heavy-edit chart and
the learner's proposals show what the product did.

Nothing here writes a draft, a pair, a proposal or a score. On a simulated clock (time-machine),
over the DAYS days before today, on the offline provider:
- each morning their inbound email arrives in a local Gmail (drafting.demo_gmail), to which
  their accounts are connected; the Gmail source of hydration reads it and stores the items, and
  drafting's own task body (`item_process`) drafts each one (the rules, the `email.draft` call,
  the draft saved through the outbox) or skips it (newsletters);
- during the day each person sends their reply in the thread: what they send is decided by the
  people of `manage.py learner_simulate` (drafting.learner.simulation.users): they edit the draft
  to their own truth, which changes on seeded days (a new head of legal, a colleague leaving);
  their sent mail is read the same way and `item_process` pairs it with the draft;
- every hour the learner's cadence (`learner_due`) decides who is due, and `learner_run` proposes,
  replays, asks the judge twice per comparison and accepts or rejects by the sign test.
The one row written outright is each person's starting context document (the simulation's stale
one), a "system" revision that says it is the demo's. Afterwards the accounts are left
disconnected, saying why.

`demo_check` recounts the chart's figures, the drafts page's counts and the learner's decisions
from the stored records; every seed_demo runs it and fails (DemoFailed) when they differ.
Idempotent: once the demo people have drafts, the two weeks are not run again."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import datetime, time, timedelta

import time_machine
from django.conf import settings
from django.db.models import Count
from django.test.utils import override_settings
from django.utils import timezone

from google_workspace.models import GmailAccount
from google_workspace.oauth import mark_disconnected
from hydration import services as hydration_services
from hydration.sources.gmail import GmailSource
from lindy.demo import require
from lindy.models import User
from memory import services as memory_services

from . import selectors, similarity
from .demo_gmail import Mailbox, serving
from .learner import services as learner_services
from .learner import stats
from .learner.simulation.users import Inbound, SimUser, make_users
from .models import Draft, DraftPair, Proposal
from .services import context_write, item_process
from .services.inbound import candidates

DAYS = 14
MAILS_PER_DAY = 3  # per person: enough for a daily rate, and the seed stays quick
SEED = 2  # the people's seed (learner_simulate --seed)
EMAILS = ("user@acme.test", "admin@acme.test")
INBOUND_HOUR, SEND_HOURS, LAST_HOUR = 8, (11, 15), 20
CHART_DAYS = 30  # the charts page's default window
GMAIL_GONE = "The demo's Gmail was a local fake holding two weeks of simulated email: connect your own Gmail."
STEP = "drafting"


@dataclass
class _Person:
    user: User
    sim: SimUser
    mailbox: Mailbox
    token: str
    cursor: dict
    inbound: dict  # Gmail message id -> the simulated Inbound it was


def _people(ctx) -> list[_Person]:
    sims = make_users(len(EMAILS), SEED)
    people = []
    for index, (email, sim) in enumerate(zip(EMAILS, sims, strict=True)):
        user = ctx.users[email]
        first, _, last = (user.name or email.split("@")[0]).partition(" ")
        people.append(_Person(user=user, sim=replace(sim, first=first, last=last or first, domain=email.split("@")[1]),
                              mailbox=Mailbox(email), token=f"demo-drafting-{index}", cursor={}, inbound={}))
    return people


def _connect(person: _Person) -> None:
    GmailAccount.objects.update_or_create(user=person.user, defaults={
        "email": person.user.email, "access_token": person.token, "refresh_token": "",
        "token_expires_at": timezone.now() + timedelta(days=DAYS + 2),
        "status": GmailAccount.Status.CONNECTED, "status_detail": ""})


def _now_ms(offset_s: int = 0) -> int:
    return int((timezone.now().timestamp() + offset_s) * 1000)


def _deliver(person: _Person, day: int, inbound: list[Inbound]) -> None:
    """The morning's mail arrives in the person's Gmail, a minute apart."""
    for n, mail in enumerate(inbound):
        message_id = f"d{person.token[-1]}x{day:02d}x{n:02d}"
        headers = {"Message-ID": f"<{message_id}@{mail.sender.split('@')[-1].rstrip('>')}>"}
        if not mail.needs_reply:
            headers["List-Unsubscribe"] = "<mailto:unsubscribe@vendor.test>"
        person.mailbox.add(message_id=message_id, thread_id=f"t-{message_id}", at_ms=_now_ms(60 * (n - len(inbound))),
                           sender=mail.sender, to=person.user.email, subject=mail.subject, body=mail.body,
                           labels=("INBOX", "UNREAD"), headers=headers)
        person.inbound[message_id] = mail


def _send(person: _Person, draft: Draft, body: str, n: int) -> None:
    """The person sends their reply in the draft's thread (Gmail files it as SENT)."""
    person.mailbox.add(message_id=f"{draft.gmail_message_id}-sent", thread_id=draft.gmail_thread_id,
                       at_ms=_now_ms(n), sender=f"{person.user.name} <{person.user.email}>",
                       to=", ".join(draft.to), subject=draft.subject, body=body, labels=("SENT",),
                       headers={"In-Reply-To": draft.rfc_message_id, "References": draft.references})


def _read_mail(person: _Person) -> None:
    """What hydration's Gmail source stores from the person's Gmail, then what drafting's task
    does with each new item (a draft for mail from others, a pair for the person's sent mail)."""
    fs = memory_services.filesystem_for_user(person.user)
    fetched = GmailSource().fetch(fs, dict(person.cursor))
    hydration_services.items_store(filesystem=fs, source="gmail", items=fetched.items, run=None)
    person.cursor = fetched.cursor
    for item_id in candidates(filesystem_id=fs.pk):
        item_process(item_id=item_id)


def seed(ctx) -> None:
    """Two weeks of email, once; then, on every seed, the recount of what the pages show."""
    people = _people(ctx)
    users = [p.user for p in people]
    if not Draft.objects.filter(user__in=users).exists():
        _two_weeks(people)
    for user in users:
        require(STEP, DraftPair.objects.filter(user=user).exists(),
                f"{user.email} sent no reply that was paired with a draft")
    decided = Proposal.objects.filter(user__in=users, kind=Proposal.Kind.EDIT)
    require(STEP, decided.filter(status=Proposal.Status.ACCEPTED).exists()
            and decided.filter(status=Proposal.Status.REJECTED).exists(),
            "the learner made no accepted and rejected proposals for the demo people")
    problems = demo_check(users=users)
    require(STEP, not problems, "what the pages show differs from the records: " + "; ".join(problems))


def _two_weeks(people: list[_Person]) -> None:
    ids = {p.user.pk for p in people}
    first = timezone.make_aware(datetime.combine(timezone.localdate() - timedelta(days=DAYS), time(0)))
    mailboxes = {p.token: p.mailbox for p in people}
    with override_settings(MODEL_OFFLINE=True), serving(mailboxes), \
            time_machine.travel(first + timedelta(hours=7), tick=False) as clock:
        for person in people:
            _connect(person)
            context_write(user=person.user, text=person.sim.stale_context(), author="system",
                          reason="Demo: the context document the simulated people start from (stale by design: "
                                 "the old greeting and sign-off, the finance lead missing).")
        for day in range(1, DAYS + 1):
            midnight = first + timedelta(days=day - 1)
            todays: list[tuple[_Person, Draft]] = []
            for hour in range(INBOUND_HOUR, LAST_HOUR + 1):
                clock.move_to(midnight + timedelta(hours=hour))
                if hour == INBOUND_HOUR:
                    for person in people:
                        before = set(person.inbound)
                        _deliver(person, day, person.sim.inbound_for_day(day, MAILS_PER_DAY))
                        _read_mail(person)
                        drafts = Draft.objects.filter(user=person.user, gmail_message_id__in=set(person.inbound) - before)
                        todays += [(person, d) for d in drafts.order_by("gmail_message_id") if d.drafted]
                if hour in SEND_HOURS:
                    share = todays[: max(1, len(todays) // (len(SEND_HOURS) - SEND_HOURS.index(hour)))]
                    todays = todays[len(share):]
                    for n, (person, draft) in enumerate(share):
                        sent = person.sim.reply(day=day, inbound=person.inbound[draft.gmail_message_id], draft=draft.body)
                        _send(person, draft, sent, n)
                    for person in {id(p): p for p, _ in share}.values():
                        _read_mail(person)
                for user_id, trigger in learner_services.learner_due(now=timezone.now()):
                    if user_id in ids:
                        person = next(p for p in people if p.user.pk == user_id)
                        learner_services.learner_run(user=person.user, trigger=trigger, now=timezone.now())
    for account in GmailAccount.objects.filter(user__in=[p.user for p in people]):  # today, not two weeks ago
        mark_disconnected(account, GMAIL_GONE)


# --- The recount ---------------------------------------------------------------------------------

def demo_check(*, users) -> list[str]:
    """What the pages show, recomputed from the records; the differences (empty when none).
    - The heavy-edit chart (the user's own, CHART_DAYS days, per day): each pair's similarity and
      heavy-edit flag recomputed from the draft and what was sent (drafting.similarity, the pair's
      own threshold), counted per day, against the chart's per-day heavy and scorable counts.
    - The drafts page's counts per status against the drafts themselves.
    - Each accepted or rejected proposal: its wins, losses and ties recounted from its comparisons
      and the sign test run again must give its status."""
    problems: list[str] = []
    since = timezone.now() - timedelta(days=CHART_DAYS)
    for user in users:
        chart = selectors.heavy_edit_series(selectors.pairs_in_scope(user=user, team_id=None, days=CHART_DAYS))
        shown: dict[str, tuple[int, int]] = {}
        for index, period in enumerate(chart["periods"]):
            shown[period] = (sum(s["heavy"][index] for s in chart["series"]),
                             sum(s["scorable"][index] for s in chart["series"]))
        counted: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for pair in DraftPair.objects.filter(user=user, created_at__gte=since).select_related("draft"):
            scored = similarity.score(pair.draft.body, pair.sent_body)
            day = timezone.localtime(pair.created_at).date().isoformat()
            if scored.scorable and scored.similarity is not None:
                threshold = pair.heavy_edit_threshold if pair.heavy_edit_threshold is not None \
                    else settings.LINDY_DRAFT_HEAVY_EDIT_THRESHOLD
                counted[day][1] += 1
                counted[day][0] += scored.similarity < threshold
            else:
                counted.setdefault(day, [0, 0])
        recount = {day: (heavy, scorable) for day, (heavy, scorable) in counted.items()}
        for day in sorted(set(shown) | set(recount)):
            if shown.get(day) != recount.get(day):
                problems.append(f"{user.email}'s chart shows {shown.get(day)} heavy/scorable pairs on {day}, "
                                f"the pairs recount {recount.get(day)}")
        page = selectors.status_counts(user)
        rows = dict(Draft.objects.filter(user=user).order_by().values_list("status").annotate(n=Count("pk")))
        if page != rows:
            problems.append(f"{user.email}'s drafts page counts {page}, the drafts are {rows}")
    proposals = Proposal.objects.filter(user__in=users, kind=Proposal.Kind.EDIT,
                                        status__in=[Proposal.Status.ACCEPTED, Proposal.Status.REJECTED])
    for proposal in proposals.prefetch_related("comparisons"):
        outcomes = [c.outcome for c in proposal.comparisons.all()]
        if not outcomes:
            continue  # rejected before any comparison (a document over the size limit)
        wins, losses, ties = (outcomes.count(o) for o in ("win", "loss", "tie"))
        gate = stats.gate(wins=wins, losses=losses, ties=ties, alpha=getattr(settings, "LINDY_LEARNER_ALPHA", 0.1),
                          min_decided=getattr(settings, "LINDY_LEARNER_MIN_DECIDED", 5))
        if (proposal.wins, proposal.losses, proposal.ties) != (wins, losses, ties) or gate.decision != proposal.status:
            problems.append(f"proposal {proposal.pk} is {proposal.status} with {proposal.wins}/{proposal.losses}/"
                            f"{proposal.ties}; its comparisons recount {wins}/{losses}/{ties}, {gate.decision}")
    return problems
