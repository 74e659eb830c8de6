"""Property: whatever sequence of writes is attempted, the ones accepted leave a file
system the verifier passes (recounted from scratch), and refused ones change nothing."""

from __future__ import annotations

import uuid

import pytest
from django.db import transaction
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lindy.models import Team
from memory import services
from memory.models import FileSystem, MemoryFile
from memory.services import Change
from memory.verifier import Budgets, verify
from router.offline import estimate_tokens
from tests.memory.factories import write_linked

PATHS = ["a.md", "b.md", "people/jane.md", "people/joe.md", "x/y/z.md", "master.md"]
words = st.sampled_from(["Jane", "rule:", "deploy", "Friday", "[j](people/jane.md)", "[a](a.md)", "[z](x/y/z.md)",
                         "[gone](gone.md)", "\n", "- ", "`[b](b.md)`", "é", "word " * 8])
text = st.lists(words, max_size=12).map("".join)
path = st.sampled_from(PATHS)

operations = st.one_of(
    st.tuples(st.just("write"), path, text, st.one_of(st.none(), st.text(max_size=20), st.just("about it"))),
    st.tuples(st.just("write"), path, text, st.just("linked")),
    st.tuples(st.just("index"), text),
    st.tuples(st.just("move"), path, path, st.booleans()),
    st.tuples(st.just("delete"), path, st.booleans()),
    st.tuples(st.just("revert"), st.integers(min_value=0, max_value=20)),
    st.tuples(st.just("batch"), st.lists(st.tuples(path, text), min_size=1, max_size=4)),
)


def snapshot(fs):
    return dict(MemoryFile.objects.filter(filesystem=fs).values_list("path", "content"))


def attempt(fs, op, revisions):
    kind = op[0]
    if kind == "write":
        _, target, content, description = op
        return services.file_write(filesystem=fs, path=target, content=content, base_version=None,
                                   author_kind="memory_agent", index_description=description)
    if kind == "index":
        return services.changes_apply(filesystem=fs, changes=[Change("write", "index.md", content=op[1])],
                                      author_kind="person")
    if kind == "move":
        return services.file_move(filesystem=fs, path=op[1], new_path=op[2], base_version=None,
                                  author_kind="person", update_links=op[3])
    if kind == "delete":
        return services.file_delete(filesystem=fs, path=op[1], base_version=None, author_kind="person",
                                    update_links=op[2])
    if kind == "revert":
        if not revisions:
            return None
        return services.revision_revert(revision=revisions[op[1] % len(revisions)], author_kind="person")
    changes = [Change("write", target, content=content) for target, content in op[1]]
    return services.changes_apply(filesystem=fs, changes=changes, author_kind="learner")


@pytest.mark.django_db
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(operations, max_size=25))
def test_accepted_writes_always_leave_a_verified_file_system(ops):
    with transaction.atomic():
        team = Team.objects.create(name=f"T-{uuid.uuid4()}")
        fs = team.memory_filesystem
        FileSystem.objects.filter(pk=fs.pk).update(file_token_budget=25, always_loaded_token_budget=80)
        fs.refresh_from_db()
        budgets = Budgets(file_tokens=25, always_loaded_tokens=80)
        revisions = [write_linked(fs, {"a.md": "A", "people/jane.md": "Jane"})]
        for op in ops:
            before = snapshot(fs)
            try:
                revision = attempt(fs, op, revisions)
            except services.MemoryWriteError as exc:
                event(f"refused {op[0]}: {type(exc).__name__}")
                assert snapshot(fs) == before, f"a refused {op[0]} changed the files"
                continue
            event(f"accepted {op[0]}")
            if revision is not None:
                revisions.append(revision)
            files = snapshot(fs)
            assert verify(files, budgets, count=estimate_tokens) == []
            stored = dict(MemoryFile.objects.filter(filesystem=fs).values_list("path", "tokens"))
            assert stored == {p: estimate_tokens(c) for p, c in files.items()}
        transaction.set_rollback(True)
