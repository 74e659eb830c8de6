from lindy import demo
from memory.models import FileSystem, Revision
from memory.selectors import status


def test_demo_memory_is_realistic_verified_and_idempotent(db):
    ctx = demo.seed()
    acme = ctx.teams["Acme"].memory_filesystem
    assert acme.files.count() >= 10
    assert {"memory_agent", "person"} <= set(acme.revisions.values_list("author_kind", flat=True))
    umar = ctx.users["user@acme.test"].memory_filesystem
    assert umar.revisions.filter(author_kind="learner").exists()
    for fs in FileSystem.objects.all():
        assert status(fs) == [], fs
    revisions = Revision.objects.count()
    demo.seed()
    assert Revision.objects.count() == revisions
