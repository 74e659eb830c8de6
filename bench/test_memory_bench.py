"""`make bench`: the memory bench (bench/memory_bench.py) under pytest-benchmark, on the
test database: 5,000 files, the verifier over all of them, and the tree and file pages
with their query counts (printed, and bounded)."""

from __future__ import annotations

import memory_bench
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

FILES = 5000
MAX_QUERIES = 14


@pytest.fixture(scope="module")
def big(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        fs, admin, build_seconds = memory_bench.build(FILES)
        print(f"\nbuilt {FILES} files in one revision in {build_seconds:.2f} s")
        yield fs, admin


@pytest.mark.django_db
def test_verifier_over_the_whole_file_system(benchmark, big):
    from memory.models import MemoryFile
    from memory.verifier import verify
    from router.offline import estimate_tokens

    fs, _ = big
    files = dict(MemoryFile.objects.filter(filesystem=fs).values_list("path", "content"))
    assert len(files) == FILES
    assert benchmark(verify, files, fs.budgets, count=estimate_tokens) == []


@pytest.mark.django_db
@pytest.mark.parametrize("name", [
    "tree (root)", "tree (folder, page 10)", "search", "file", "file history", "revisions",
])
def test_page(benchmark, big, name):
    fs, admin = big
    url = memory_bench.page_urls(fs)[name]
    client = Client()
    client.force_login(admin)
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    print(f"\n{name}: {len(captured)} queries")
    assert len(captured) <= MAX_QUERIES
    response = benchmark(client.get, url)
    assert response.status_code == 200
