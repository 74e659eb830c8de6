from lindy import demo
from memory.models import FileSystem, Revision
from memory.selectors import status


def test_demo_memory_is_realistic_verified_and_idempotent(seeded_demo):
    ctx = seeded_demo
    acme = ctx.teams["Acme"].memory_filesystem
    assert acme.files.count() >= 10
    assert {"system", "memory_agent", "person"} <= set(acme.revisions.values_list("author_kind", flat=True))
    # Memory-agent revisions come from real (offline) hydration runs, with their provenance.
    for revision in acme.revisions.filter(author_kind="memory_agent"):
        assert revision.source_kind == "hydration_run" and revision.source_id.isdigit()
    # Both links between a run and its revision agree: Revision.source_* and Run.revision.
    from hydration.models import Run

    linked = Revision.objects.filter(source_kind="hydration_run")
    assert linked.exists()
    for revision in linked:
        assert Run.objects.get(pk=int(revision.source_id)).revision_id == revision.pk
    for run in Run.objects.filter(revision__isnull=False).select_related("revision"):
        assert (run.revision.source_kind, run.revision.source_id) == ("hydration_run", str(run.pk))
        assert run.revision.filesystem_id == run.filesystem_id
    umar = ctx.users["user@acme.test"].memory_filesystem
    assert umar.revisions.filter(author_kind="memory_agent", source_kind="hydration_run").exists()
    for fs in FileSystem.objects.all():
        assert status(fs) == [], fs
    revisions = Revision.objects.count()
    demo.seed()
    assert Revision.objects.count() == revisions
