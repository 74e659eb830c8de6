"""Teams and users created before the memory app get their file system (an empty index)."""

from django.db import migrations


def create_missing(apps, schema_editor):
    Team = apps.get_model("lindy", "Team")
    User = apps.get_model("lindy", "User")
    FileSystem = apps.get_model("memory", "FileSystem")
    MemoryFile = apps.get_model("memory", "MemoryFile")
    Revision = apps.get_model("memory", "Revision")
    FileChange = apps.get_model("memory", "FileChange")

    def create(**holder):
        fs = FileSystem.objects.create(**holder)
        revision = Revision.objects.create(
            filesystem=fs, author_kind="system", message="Created the file system with an empty index"
        )
        MemoryFile.objects.create(filesystem=fs, path="index.md", folder="", content="", version=1, tokens=0,
                                  tokens_exact=True)
        FileChange.objects.create(revision=revision, filesystem=fs, op="create", path="index.md", after_version=1)

    for team in Team.objects.filter(memory_filesystem__isnull=True):
        create(kind="team", team=team)
    for user in User.objects.filter(memory_filesystem__isnull=True):
        create(kind="user", owner=user)


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial"), ("lindy", "0001_initial")]

    operations = [migrations.RunPython(create_missing, migrations.RunPython.noop)]
