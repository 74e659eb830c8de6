"""Simulated users for `manage.py learner_simulate`: people whose hidden truth changes over time
and who send what their truth implies. Pure (no database): the runner feeds their mail through
the product's real pipeline.

A simulated user's truth: how they greet and sign off, and who they loop in on which topics.
It changes on seeded days: a new head of legal joins (and the old one is gone), a contact leaves
(the user handles that topic alone from then on). Their context document starts stale, the
way an onboarding snapshot goes stale: the old greeting and sign-off, and the finance lead
missing.

Replying, a user edits the draft the product wrote, as people do: they keep what is right and
rewrite what their truth says is wrong (the greeting, the sign-off, a loop-in of the wrong
person or of someone gone, a missing loop-in, written in their own words). And like people they
are not perfectly regular, which is what gives a proposer room for plausible wrong inferences:
- sometimes a quick reply ("Thanks, will do.") that drops everything else, loop-ins included;
- sometimes they copy someone from the sender's side ("Adding Tom Baker (tom@...) from your
  team"), a one-off;
- sometimes they answer with content no context could give ("Clause 4 works for us.").
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

FIRST = ["Umar", "Maya", "Jonas", "Ines", "Kofi", "Lena", "Ravi", "Sofia", "Theo", "Yuki"]
LAST = ["Haddad", "Lindqvist", "Okafor", "Moreau", "Tanaka", "Costa", "Brennan", "Singh"]
SENDERS = [("Jane Park", "initech.test"), ("Priyanka Rao", "globex.test"), ("Marco Silva", "umbrella.test"),
           ("Ana Lopez", "hooli.test"), ("Ben Carter", "stark.test"), ("Chloe Martin", "wayne.test")]
TOPICS = {
    "legal": ["MSA redline", "NDA for the pilot", "Contract renewal terms", "Liability clause in the MSA"],
    "finance": ["Invoice 1042", "Payment schedule for Q3", "Billing contact update", "Overdue invoice"],
    "ops": ["Onboarding next week", "Delivery dates for the rollout", "Shipping the hardware"],
    "general": ["Roadmap question", "Meeting next Tuesday", "Feedback on the demo", "Intro call"],
}
ASKS = {
    "legal": "Could you look at the {s} and tell me whether it works for you?",
    "finance": "Can you confirm the {s} on your side?",
    "ops": "Could you let me know how the {s} should go?",
    "general": "Do you have a few minutes to discuss the {s}?",
}
# How often a user departs from their pattern (the room for wrong inferences).
QUICK, CC_OTHER, OWN_WORDS = 0.05, 0.06, 0.05
NEWSLETTER = ("news@{d}", "Weekly digest", "This week's product news. Unsubscribe at any time.")


@dataclass
class Person:
    name: str
    email: str
    role: str
    topics: list[str]

    def context_line(self) -> str:
        return f"- {self.name} <{self.email}>: {self.role} ({', '.join(self.topics)})"


@dataclass
class Inbound:
    sender: str  # "Name <email>"
    subject: str
    body: str
    topic: str
    needs_reply: bool = True


@dataclass
class SimUser:
    index: int
    seed: int
    first: str
    last: str
    domain: str
    legal_change_day: int
    leave_day: int
    rng: random.Random = field(repr=False, default_factory=random.Random)

    @property
    def email(self) -> str:
        return f"{self.first.lower()}@{self.domain}"

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"

    def _people(self) -> dict[str, Person]:
        d = self.domain
        return {
            "dana": Person("Dana Whitfield", f"dana@{d}", "Head of Legal", ["contract", "msa", "nda", "legal"]),
            "carol": Person("Carol Reyes", f"carol@{d}", "Head of Legal", ["contract", "msa", "nda", "legal"]),
            "priya": Person("Priya Nair", f"priya@{d}", "Finance lead", ["invoice", "payment", "billing"]),
            "sam": Person("Sam Ortiz", f"sam@{d}", "Operations manager", ["onboarding", "delivery", "shipping"]),
        }

    # --- the hidden truth -------------------------------------------------------------------

    def truth(self, day: int) -> dict:
        people = self._people()
        contacts = [people["carol"] if day >= self.legal_change_day else people["dana"], people["priya"]]
        if day < self.leave_day:
            contacts.append(people["sam"])
        return {"greeting": "Hey", "sign_off": "Cheers", "name": self.first, "contacts": contacts}

    def stale_context(self) -> str:
        """The document an onboarding snapshot left: right about legal and ops, the old greeting
        and sign-off, the finance lead missing."""
        people = self._people()
        return ("## Work context\n- Account executive; most mail is customer contracts, billing and rollouts.\n\n"
                "## Contacts\n" + people["dana"].context_line() + "\n" + people["sam"].context_line() + "\n\n"
                f"## Style\n- Greeting: Hi\n- Sign-off: Best\n- Name: {self.first}\n")

    # --- mail -------------------------------------------------------------------------------

    def inbound_for_day(self, day: int, count: int) -> list[Inbound]:
        out = []
        for _ in range(count):
            topic = self.rng.choices(list(TOPICS), weights=[3, 4, 2, 1])[0]
            subject = self.rng.choice(TOPICS[topic])
            name, domain = self.rng.choice(SENDERS)
            body = (f"Hi {self.first},\n\n{ASKS[topic].format(s=subject)}\n\n"
                    f"Thanks,\n{name.split()[0]}")
            out.append(Inbound(sender=f"{name} <{name.split()[0].lower()}@{domain}>", subject=subject, body=body,
                               topic=topic))
        if self.rng.random() < 0.3:
            sender, subject, body = NEWSLETTER
            out.append(Inbound(sender=f"Product News <{sender.format(d='vendor.test')}>", subject=subject, body=body,
                               topic="newsletter", needs_reply=False))
        return out

    def reply(self, *, day: int, inbound: Inbound, draft: str) -> str:
        """What the user sends: the draft edited to their truth."""
        truth = self.truth(day)
        sender_first = inbound.sender.split()[0]
        roll = self.rng.random()
        sign = f"{truth['sign_off']},\n{truth['name']}"
        if roll < QUICK:  # a quick reply: nothing else kept
            return f"Thanks, will do.\n\n{sign}"
        words = set(re.findall(r"[a-z]+", f"{inbound.subject} {inbound.body}".lower()))
        wanted = [c for c in truth["contacts"] if any(t in words for t in c.topics)]
        lines = [line for line in (draft or "").strip().splitlines()]
        # Drop the draft's own greeting and sign-off (rewritten below) and every loop-in line.
        body, kept_loops = [], set()
        for line in lines[1:]:
            match = re.match(r"I'm looping in (.+?),", line)
            if match:
                if any(c.name == match.group(1) for c in wanted):
                    body.append(line)
                    kept_loops.add(match.group(1))
                continue
            body.append(line)
        while body and (not body[-1].strip() or body[-1].strip() in (truth["name"], self.first)
                        or re.fullmatch(r"[A-Z][A-Za-z ]{0,20},", body[-1].strip())):
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        for contact in wanted:
            if contact.name not in kept_loops:
                body.append(f"I'm copying {contact.name} ({contact.email}), our {contact.role}, who looks after "
                            f"everything {inbound.topic}-related here and will take this from here.")
        if QUICK <= roll < QUICK + CC_OTHER:
            colleague = self.rng.choice(["Tom Baker", "Lucy Chen", "Omar Aziz"])
            domain = inbound.sender.split("@")[-1].rstrip(">")
            body.append(f"Adding {colleague} ({colleague.split()[0].lower()}@{domain}) from your team, who asked me "
                        "about this last week.")
        if QUICK + CC_OTHER <= roll < QUICK + CC_OTHER + OWN_WORDS:
            body.append("For what it's worth, the terms we discussed on our last call still stand, and I am happy to "
                        "walk through the details whenever suits you.")
        return f"{truth['greeting']} {sender_first},\n\n" + "\n".join(body).strip() + f"\n\n{sign}"


def make_users(count: int, seed: int) -> list[SimUser]:
    rng = random.Random(seed)
    users = []
    for i in range(count):
        first = FIRST[(seed + i) % len(FIRST)]
        last = rng.choice(LAST)
        user_rng = random.Random(seed * 1000 + i)
        users.append(SimUser(index=i, seed=seed, first=first, last=last, domain=f"sim{seed}-{i}.test",
                             legal_change_day=rng.randint(3, 4), leave_day=rng.randint(5, 6), rng=user_rng))
    return users
