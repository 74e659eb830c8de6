"""Memory at scale: build a file system of 5,000 files and report the verifier's time over
the whole file system, the tree and file pages' response times and queries per page.

    python bench/memory_bench.py [--files 5000] [--runs 5]

Runs against a fresh SQLite database under var/bench/ (or DATABASE_URL if set, which must
point at a database you can throw away), with the offline token estimate. `make bench`
runs the same measurements through pytest-benchmark (bench/test_memory_bench.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ["people", "customers", "procedures", "projects", "meetings/2026", "meetings/2025", "vendors", "notes"]
PARAGRAPH = ("Jane Park is Initech's CTO. We always deploy to staging before prod. The weekly report goes out on "
             "Friday at 9am with revenue first. ")


def setup_django() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lindy.settings")
    os.environ.setdefault("LINDY_VAR_DIR", str(ROOT / "var" / "bench"))
    os.environ.setdefault("LINDY_MODEL_OFFLINE", "1")
    db_file = Path(os.environ["LINDY_VAR_DIR"]) / "lindy.sqlite3"
    if not os.environ.get("DATABASE_URL") and db_file.exists():
        db_file.unlink()
    import django

    django.setup()
    from django.core.management import call_command
    from django.test.utils import setup_test_environment

    setup_test_environment()  # lets the test client call the pages as host "testserver"
    call_command("migrate", verbosity=0, interactive=False)


def path_for(n: int) -> str:
    return f"{FOLDERS[n % len(FOLDERS)]}/file-{n:05d}.md"


def build(files: int):
    """A team, its admin, and a file system of `files` files (index and master included) in one revision."""
    from lindy import services as lindy_services
    from lindy.models import Membership, Team, User
    from memory import services
    from memory.models import FileSystem
    from memory.services import Change

    team = Team.objects.create(name=f"Bench {time.time_ns()}")
    admin = User.objects.create_user(email=f"bench-{time.time_ns()}@example.test", password="bench-pw")
    lindy_services.membership_set(team=team, user=admin, role=Membership.Role.ADMIN)
    fs = team.memory_filesystem
    # 5,000 index lines do not fit the default always-loaded budget; a file system this big
    # is a stress test of the machinery, not a sensible memory.
    FileSystem.objects.filter(pk=fs.pk).update(always_loaded_token_budget=10_000_000)
    fs.refresh_from_db()
    others = files - 2
    # Links are split between index.md and master.md so each stays under the byte limit per file.
    index = "# Index\n\n" + "".join(f"- [{path_for(n)}]({path_for(n)})\n" for n in range(0, others, 2))
    master = "# Master\n\n" + "".join(f"- [{path_for(n)}]({path_for(n)})\n" for n in range(1, others, 2))
    changes = [Change("create", path_for(n), content=f"# File {n}\n\n{PARAGRAPH * (1 + n % 4)}") for n in range(others)]
    changes += [Change("write", "index.md", content=index), Change("create", "master.md", content=master)]
    started = time.perf_counter()
    services.changes_apply(filesystem=fs, changes=changes, author_kind="system", message="Bench build")
    build_seconds = time.perf_counter() - started
    for n in range(20):  # some history on one file
        target = path_for(1)
        services.changes_apply(filesystem=fs, changes=[Change("write", target, content=f"# File 1\n\nEdit {n}\n")],
                               author_kind="memory_agent")
    # The planner's statistics as autovacuum leaves them within a minute of a bulk write: measured
    # straight after it, PostgreSQL would still think the table empty and plan for that.
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE memory_memoryfile, memory_filechange, memory_revision")
    return fs, admin, build_seconds


def personal(files: int):
    """A member of a new team and their own memory of `files` files; and `meetings(n, tag)`, which
    gives them n new meetings (a hydration source). For the hydration and agent CPU benches."""
    from django.utils import timezone

    from lindy import services as lindy_services
    from lindy.models import Membership, Team, User
    from memory import services
    from memory.models import FileSystem
    from memory.services import Change

    stamp = time.time_ns()
    team = Team.objects.create(name=f"Personal bench {stamp}")
    user = User.objects.create_user(email=f"personal-{stamp}@example.test", password="bench-pw")
    lindy_services.membership_set(team=team, user=user, role=Membership.Role.MEMBER)
    fs = services.filesystem_for_user(user)
    FileSystem.objects.filter(pk=fs.pk).update(always_loaded_token_budget=10_000_000)
    fs.refresh_from_db()
    others = files - 2
    index = "# Index\n\n" + "".join(f"- [{path_for(n)}]({path_for(n)})\n" for n in range(0, others, 2))
    master = "# Master\n\n" + "".join(f"- [{path_for(n)}]({path_for(n)})\n" for n in range(1, others, 2))
    changes = [Change("create", path_for(n), content=f"# File {n}\n\n{PARAGRAPH}") for n in range(others)]
    changes += [Change("write", "index.md", content=index), Change("create", "master.md", content=master)]
    services.changes_apply(filesystem=fs, changes=changes, author_kind="system", message="Bench build")

    def meetings(n: int, tag: str):
        for i in range(n):
            lindy_services.meeting_create(
                team=team, owner=user, title=f"{tag} sync {i}", occurred_at=timezone.now(),
                notes=f"We always check item {tag}-{i} before release. Jane Park joined Initech as CTO {i}.")

    return fs, user, meetings


def verifier_times(fs, runs: int) -> dict:
    from memory import selectors
    from memory.models import MemoryFile
    from memory.verifier import verify
    from router.offline import estimate_tokens

    files = dict(MemoryFile.objects.filter(filesystem=fs).values_list("path", "content"))
    tokens = dict(MemoryFile.objects.filter(filesystem=fs).values_list("path", "tokens"))
    recount, stored, live = [], [], []
    for _ in range(runs):
        started = time.perf_counter()
        assert verify(files, fs.budgets, count=estimate_tokens) == []
        recount.append(time.perf_counter() - started)
        started = time.perf_counter()
        assert verify(files, fs.budgets, tokens=tokens) == []
        stored.append(time.perf_counter() - started)
        started = time.perf_counter()
        assert selectors.status(fs) == []
        live.append(time.perf_counter() - started)
    return {"files": len(files), "verify_recount_s": statistics.median(recount),
            "verify_stored_counts_s": statistics.median(stored), "status_with_queries_s": statistics.median(live)}


def page_urls(fs) -> dict[str, str]:
    revision = fs.revisions.order_by("-pk").first()
    return {
        "tree (root)": f"/memory/{fs.pk}/",
        "tree (folder, page 1)": f"/memory/{fs.pk}/?dir=people/",
        "tree (folder, page 10)": f"/memory/{fs.pk}/?dir=people/&page=10",
        "search": f"/memory/{fs.pk}/?q=file-0421",
        "file": f"/memory/{fs.pk}/files/{path_for(42)}",
        "index file": f"/memory/{fs.pk}/files/index.md",
        "master file": f"/memory/{fs.pk}/files/master.md",
        "file history": f"/memory/{fs.pk}/history/{path_for(1)}",
        "revisions": f"/memory/{fs.pk}/revisions/",
        "revision": f"/memory/{fs.pk}/revisions/{revision.pk}/",
        "api verify": f"/api/memory/filesystems/{fs.pk}/verify",
    }


def page_times(fs, user, runs: int) -> list[dict]:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(user)
    rows = []
    for name, url in page_urls(fs).items():
        client.get(url)  # warm template and query caches
        times, queries = [], 0
        for _ in range(runs):
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = client.get(url)
                times.append(time.perf_counter() - started)
            assert response.status_code == 200, (url, response.status_code)
            queries = len(captured)
        rows.append({"page": name, "url": url, "median_ms": 1000 * statistics.median(times), "queries": queries})
    return rows


def report(files: int, runs: int) -> str:
    fs, admin, build_seconds = build(files)
    verifier = verifier_times(fs, runs)
    pages = page_times(fs, admin, runs)
    lines = [
        f"Memory bench: {verifier['files']} files, median of {runs} runs",
        f"  build (one revision through changes_apply): {build_seconds:.2f} s",
        f"  verifier, every file against its budget:    {1000 * verifier['verify_recount_s']:.1f} ms",
        f"  verifier, stored token counts:              {1000 * verifier['verify_stored_counts_s']:.1f} ms",
        f"  live status (2 queries + verifier):         {1000 * verifier['status_with_queries_s']:.1f} ms",
        "",
        f"  {'page':<24} {'median ms':>10} {'queries':>8}",
    ]
    lines += [f"  {row['page']:<24} {row['median_ms']:>10.1f} {row['queries']:>8}" for row in pages]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    setup_django()
    print(report(args.files, args.runs))


if __name__ == "__main__":
    main()
