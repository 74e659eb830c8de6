"""`make bench`: memory at 5,000 files (bench/memory_bench.py builds it on the test database).

- the verifier over every file, against a bare `sum(len)` pass over the same contents;
- memory pages, p95 against a trivial signed-in view, with their query counts bounded.
"""

from __future__ import annotations

import memory_bench
import pytest
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from ratios import interleaved, p95, record

FILES = 5000
RUNS = 40
MAX_QUERIES = 14
PAGE_GOAL = 3.0
VERIFIER_GOAL = 20.0


@pytest.fixture(scope="module")
def big(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        fs, admin, build_seconds = memory_bench.build(FILES)
        print(f"\nbuilt {FILES} files in one revision in {build_seconds:.2f} s")
        yield fs, admin


@pytest.mark.django_db
def test_verifier_over_the_whole_file_system(big):
    from memory import verifier
    from memory.models import MemoryFile
    from router.offline import estimate_tokens

    fs, _ = big
    files = dict(MemoryFile.objects.filter(filesystem=fs).values_list("path", "content"))
    assert len(files) == FILES
    contents = list(files.values())
    assert verifier.verify(files, fs.budgets, count=estimate_tokens) == []
    warm, bare = interleaved(lambda: verifier.verify(files, fs.budgets, count=estimate_tokens),
                             lambda: sum(len(c) for c in contents), RUNS)
    record("verifier over 5,000 files, every file against its budget", min(warm), min(bare), VERIFIER_GOAL,
           note="index and master parsed once per content, as on every write after the first; "
                "a file too short to pass its budget is cleared on its length, the rest are counted")

    # A write that changes the index: its new content is parsed, master.md's (unchanged) is not.
    # The texts are made beforehand so only the verifier is timed.
    edits = iter([{**files, "index.md": files["index.md"] + f"\nEdited {n}.\n"} for n in range(RUNS + 1)])

    def index_changed():
        verifier.verify(next(edits), fs.budgets, count=estimate_tokens)

    first, bare = interleaved(index_changed, lambda: sum(len(c) for c in contents), RUNS)
    record("verifier over 5,000 files, on a write that changes the index", min(first), min(bare), VERIFIER_GOAL,
           note="index.md's new links parsed and resolved, master.md's kept from its last parse")

    def cold():
        verifier.forget_parsed()
        verifier.verify(files, fs.budgets, count=estimate_tokens)

    both, bare = interleaved(cold, lambda: sum(len(c) for c in contents), RUNS)
    print(f"\ninfo: verifier over 5,000 files, index and master both parsed anew: {min(both) / min(bare):.1f}× "
          f"the bare pass ({min(both):.3f} vs {min(bare):.3f} ms)")


@pytest.mark.django_db
@pytest.mark.parametrize("name", [
    "tree (root)", "tree (folder, page 1)", "tree (folder, page 10)", "search", "file", "index file", "master file",
    "file history", "revisions", "revision", "api verify",
])
def test_page(big, name):
    fs, admin = big
    url = memory_bench.page_urls(fs)[name]
    client = Client()
    client.force_login(admin)
    with override_settings(ROOT_URLCONF="bench_urls"):
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        print(f"\n{name}: {len(captured)} queries")
        assert len(captured) <= MAX_QUERIES
        page, trivial = interleaved(lambda: client.get(url), lambda: client.get("/bench/trivial/"), RUNS)
    record(f"memory page at 5,000 files: {name}", p95(page), p95(trivial), PAGE_GOAL, note="p95")
