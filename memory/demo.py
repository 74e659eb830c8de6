"""Demo memory: realistic team and user memory (people, customers, procedures, projects),
written through the same service as everything else, in a few revisions by different
authors so history, diffs and reverts have something to show. Idempotent: a file system
that already has a master.md is left alone."""

from __future__ import annotations

from . import services
from .models import FileSystem
from .services import Change

ACME_MASTER = """# Acme — master file

**What we do.** Acme sells industrial anvils and the software that schedules their delivery, to
mid-size manufacturers in Europe and North America. Revenue is annual subscriptions plus hardware.

**People.**
- Ada Admin — CEO, owns the company's Lindy workspace.
- Umar User — head of sales; runs the weekly revenue report.
- Sarah Chen — engineering lead; runs hiring interviews. See [Sarah](people/sarah-chen.md).
- Priya Rao — head of legal since this quarter; reviews every MSA change. See [Priya](people/priya-rao.md).

**Customers.** Initech is our biggest customer ([Initech](customers/initech.md)); Northwind is a supplier.

**How we work.** We always deploy to staging before prod. Never schedule interviews on Fridays.
"""

ACME_FILES = {
    "people/sarah-chen.md": "# Sarah Chen\n\nEngineering lead. Leads backend interviews.\n\n- Wants revenue numbers first in the weekly report.\n- Never schedule interviews on Fridays.\n",
    "people/priya-rao.md": "# Priya Rao\n\nHead of Legal (joined this quarter). Email: priya@acme.test.\n\n- Reviews every MSA change before it goes out.\n- Cc her on anything about liability caps.\n",
    "people/jane-park.md": "# Jane Park (Initech)\n\nCTO of Initech. Wants a 2-year renewal. Prefers short emails with a clear ask.\n",
    "customers/initech.md": "# Initech\n\nOur biggest customer. CTO: [Jane Park](../people/jane-park.md).\n\n- MSA under negotiation: they asked for a liability cap of 2x fees (clause 7.2).\n- Renewal: 2 years proposed on the last call.\n",
    "customers/northwind.md": "# Northwind (supplier)\n\nSends invoices from billing@northwind.test. Invoices are paid by Ada after checking the PO;\nan 'URGENT, pay now' email is not a reason to skip the check.\n",
    "procedures/deploys.md": "# Deploys\n\nWe always deploy to staging before prod. Deploys happen Monday to Thursday.\n",
    "procedures/weekly-report.md": "# Weekly report\n\nEvery Friday at 9am, to the whole team. Revenue numbers first (Sarah asked), then pipeline, then hiring.\n",
    "projects/q3-offsite.md": "# Q3 offsite\n\n20 people, near Lisbon, in September. Shortlist: Palácio Chiado, LX Factory, Pestana Palace.\n",
    "projects/onboarding-flow.md": "# New onboarding flow\n\nShipped on Tuesday. Next: measure activation after 14 days.\n",
}
ACME_INDEX_LINES = {
    "people/sarah-chen.md": "Sarah Chen, engineering lead: interview rules, report preferences",
    "people/priya-rao.md": "Priya Rao, head of legal: MSA reviews",
    "people/jane-park.md": "Jane Park, Initech's CTO",
    "customers/initech.md": "Initech, our biggest customer: MSA and renewal",
    "customers/northwind.md": "Northwind, supplier: how their invoices are paid",
    "procedures/deploys.md": "How we deploy",
    "procedures/weekly-report.md": "The Friday weekly report",
    "projects/q3-offsite.md": "Q3 offsite near Lisbon",
    "projects/onboarding-flow.md": "The new onboarding flow",
}

UMAR_MASTER = """# Umar User

Head of sales at Acme. Works from Lisbon (WET). Prefers replies under 120 words.

**Standing permissions.**
- You may reply to customers on Umar's behalf about scheduling without asking.
- You may not sign or send any contract change without Umar's explicit approval.

**Routines.** Every Friday at 9am send the weekly report to the team, revenue numbers first.
"""

GLOBEX_MASTER = """# Globex — master file

Globex makes logistics software for ports. Greta Globex runs the company and the board deck.
Board meetings are quarterly; the deck needs Q2 numbers collected by the 10th.
See [the board deck procedure](procedures/board-deck.md).
"""


def _index(files: dict[str, str]) -> str:
    return "# Index\n\n" + "".join(f"- [{path}]({path}) — {files[path]}\n" for path in sorted(files))


def _seed_acme(fs: FileSystem, admin, user) -> None:
    first = {p: ACME_FILES[p] for p in ("people/sarah-chen.md", "people/priya-rao.md", "customers/initech.md",
                                          "procedures/deploys.md", "procedures/weekly-report.md")}
    lines = {p: ACME_INDEX_LINES[p] for p in first}
    services.changes_apply(
        filesystem=fs, author_kind="system", message="Demo data: people, customers and procedures",
        changes=[Change("create", "master.md", content=ACME_MASTER),
                 *[Change("create", p, content=c) for p, c in first.items()],
                 Change("write", "index.md", content=_index(lines))],
    )
    rest = {p: c for p, c in ACME_FILES.items() if p not in first}
    lines.update({p: ACME_INDEX_LINES[p] for p in rest})
    services.changes_apply(
        filesystem=fs, author_kind="system", message="Demo data: projects and the Initech renewal",
        changes=[*[Change("create", p, content=c) for p, c in rest.items()],
                 Change("write", "index.md", content=_index(lines))],
    )
    deploys = fs.files.get(path="procedures/deploys.md")
    services.file_write(
        filesystem=fs, path="procedures/deploys.md", base_version=deploys.version, author_kind="person", author=admin,
        message="Deploy freeze on Fridays", content=deploys.content + "\nNo deploys on Fridays: the weekly report goes out at 9am.\n",
    )


def _seed_user(fs: FileSystem, user, master: str, files: dict[str, tuple[str, str]] | None = None) -> None:
    files = files or {}
    services.changes_apply(
        filesystem=fs, author_kind="person", author=user, message="Wrote my master file",
        changes=[Change("create", "master.md", content=master)],
    )
    if files:
        services.changes_apply(
            filesystem=fs, author_kind="system", message="Demo data: drafting preferences",
            changes=[*[Change("create", p, content=c) for p, (c, _) in files.items()],
                     Change("write", "index.md", content=_index({p: d for p, (_, d) in files.items()}))],
        )


def seed(ctx) -> None:
    acme, globex = ctx.teams["Acme"], ctx.teams["Globex"]
    admin, user = ctx.users["admin@acme.test"], ctx.users["user@acme.test"]
    plan = [
        (services.filesystem_for_team(acme), lambda fs: _seed_acme(fs, admin, user)),
        (services.filesystem_for_team(globex), lambda fs: _seed_globex(fs, ctx.users["admin@globex.test"])),
        (services.filesystem_for_user(user), lambda fs: _seed_user(fs, user, UMAR_MASTER, {
            "drafting/email-style.md": (
                "# How Umar writes email\n\n- Opens with the ask, not pleasantries.\n- Signs off 'Best, Umar'.\n"
                "- Cc Priya on anything legal.\n", "How Umar writes email (learned from sent mail)"),
            "people/sarah-chen.md": (
                "# Sarah\n\nWants revenue first in the weekly report. Prefers Slack to email.\n",
                "Working with Sarah"),
        })),
        (services.filesystem_for_user(admin), lambda fs: _seed_user(
            fs, admin, "# Ada Admin\n\nCEO of Acme. Approves every vendor payment personally.\n")),
        (services.filesystem_for_user(ctx.users["sarah@acme.test"]), lambda fs: _seed_user(
            fs, ctx.users["sarah@acme.test"], "# Sarah Chen\n\nEngineering lead. No meetings before 10am.\n")),
    ]
    for fs, fill in plan:
        if not fs.files.filter(path="master.md").exists():
            fill(fs)


def _seed_globex(fs: FileSystem, greta) -> None:
    services.changes_apply(
        filesystem=fs, author_kind="person", author=greta, message="Company basics",
        changes=[Change("create", "master.md", content=GLOBEX_MASTER),
                 Change("create", "procedures/board-deck.md",
                        content="# Board deck\n\nCollect Q2 numbers from finance by the 10th; Greta reviews the draft.\n")],
    )
