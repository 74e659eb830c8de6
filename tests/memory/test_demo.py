from lindy import demo
from memory.models import FileSystem, Revision
from memory.selectors import status


def test_demo_memory_is_realistic_verified_and_idempotent(db):
    ctx = demo.seed()
    acme = ctx.teams["Acme"].memory_filesystem
    assert acme.files.count() >= 10
    assert {"system", "memory_agent", "person"} <= set(acme.revisions.values_list("author_kind", flat=True))
    # Memory-agent revisions come from real (offline) hydration runs, with their provenance.
    for revision in acme.revisions.filter(author_kind="memory_agent"):
        assert revision.source_kind == "hydration_run" and revision.source_id.isdigit()
    umar = ctx.users["user@acme.test"].memory_filesystem
    assert umar.revisions.filter(author_kind="memory_agent", source_kind="hydration_run").exists()
    for fs in FileSystem.objects.all():
        assert status(fs) == [], fs
    revisions = Revision.objects.count()
    demo.seed()
    assert Revision.objects.count() == revisions
