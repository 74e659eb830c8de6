"""Memory file systems: one per team and one per user, their files and every revision."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.db.models import Q

from .verifier import DEFAULT_ALWAYS_LOADED_TOKEN_BUDGET, DEFAULT_FILE_TOKEN_BUDGET, Budgets

if TYPE_CHECKING:
    from django.utils.safestring import SafeString

    from .diffs import Line, Row


def default_file_token_budget() -> int:
    return getattr(settings, "MEMORY_FILE_TOKEN_BUDGET", DEFAULT_FILE_TOKEN_BUDGET)


def default_always_loaded_token_budget() -> int:
    return getattr(settings, "MEMORY_ALWAYS_LOADED_TOKEN_BUDGET", DEFAULT_ALWAYS_LOADED_TOKEN_BUDGET)


class FileSystem(models.Model):
    class Kind(models.TextChoices):
        TEAM = "team", "Team"
        USER = "user", "User"

    kind = models.CharField(max_length=10, choices=Kind.choices)
    team = models.OneToOneField(
        "lindy.Team", null=True, blank=True, on_delete=models.CASCADE, related_name="memory_filesystem"
    )
    owner = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="memory_filesystem"
    )
    file_token_budget = models.PositiveIntegerField(
        default=default_file_token_budget, help_text="Most tokens any file other than index.md and master.md may take."
    )
    always_loaded_token_budget = models.PositiveIntegerField(
        default=default_always_loaded_token_budget,
        help_text="Most tokens index.md and master.md may take together (they are always in context).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                name="memory_fs_one_holder",
                condition=(Q(kind="team", team__isnull=False, owner__isnull=True)
                           | Q(kind="user", owner__isnull=False, team__isnull=True)),
            )
        ]

    def __str__(self):
        return self.label

    @property
    def label(self) -> str:
        """How the assistant's context names this file system, e.g. 'team:Acme'."""
        if self.kind == self.Kind.TEAM:
            assert self.team is not None  # memory_fs_one_holder: a team file system has a team
            return f"team:{self.team.name}"
        assert self.owner is not None  # memory_fs_one_holder: a user file system has an owner
        return f"user:{self.owner.email}"

    @property
    def title(self) -> str:
        if self.kind == self.Kind.TEAM:
            assert self.team is not None  # memory_fs_one_holder
            return f"{self.team.name} team memory"
        assert self.owner is not None  # memory_fs_one_holder
        return f"{self.owner.display_name}'s memory"

    @property
    def budgets(self) -> Budgets:
        return Budgets(file_tokens=self.file_token_budget, always_loaded_tokens=self.always_loaded_token_budget)


class MemoryFile(models.Model):
    """The live state of one file. Its past lives in FileChange rows."""

    filesystem = models.ForeignKey(FileSystem, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=255)
    folder = models.CharField(max_length=255, blank=True, help_text="The path's folder, e.g. 'people/' (root: '').")
    content = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=1, help_text="Goes up by one with every change.")
    size = models.PositiveIntegerField(default=0, help_text="Bytes of UTF-8.")
    tokens = models.PositiveIntegerField(default=0)
    tokens_exact = models.BooleanField(default=False, help_text="Counted by the model's counter, not estimated.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["path"]
        constraints = [models.UniqueConstraint(fields=["filesystem", "path"], name="memory_file_path_unique")]
        indexes = [models.Index(fields=["filesystem", "folder", "path"])]

    def __str__(self):
        return self.path


# source_kind of a revision that puts a file back to its text before a change (source_id: that
# change): memory.blame gives the restored lines back to whoever wrote them then.
RESTORE_SOURCE = "file_restore"
# source_kind of a revision that made the file system a zip's files (memory.portable).
IMPORT_SOURCE = "zip_import"
# source_kind of a person's write, saying where they typed it.
VIA_BROWSER = "browser"
VIA_API = "api"


class Revision(models.Model):
    """One accepted batch of changes to a file system."""

    class AuthorKind(models.TextChoices):
        PERSON = "person", "Person"
        MEMORY_AGENT = "memory_agent", "Memory agent"
        LEARNER = "learner", "Learner"
        SYSTEM = "system", "System"

    class WordsOf(models.TextChoices):
        OWNER = "owner", "Only the owner's own words"
        OTHERS = "others", "Other people's words"
        MIXED = "mixed", "The owner's and other people's words"

    filesystem = models.ForeignKey(FileSystem, on_delete=models.CASCADE, related_name="revisions")
    author_kind = models.CharField(max_length=20, choices=AuthorKind.choices)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="memory_revisions"
    )
    message = models.CharField(max_length=500, blank=True)
    # What produced it, when known: e.g. ("hydration_run", "42"), ("learner_run", "7").
    source_kind = models.CharField(max_length=50, blank=True)
    source_id = models.CharField(max_length=100, blank=True)
    reverts = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reverted_by"
    )

    # For a writer that summarizes outside text (hydration): whose words every item behind the
    # revision were, and who they were, in words. Blank for people typing into memory.
    words_of = models.CharField(max_length=10, choices=WordsOf.choices, blank=True)
    words_from = models.CharField(max_length=300, blank=True, help_text="e.g. \"Jane Park's email (external)\".")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["filesystem", "-created_at"]),
            models.Index(fields=["source_kind", "source_id"]),
        ]

    def __str__(self):
        return f"r{self.pk} {self.message[:40]}"

    @property
    def author_label(self) -> str:
        if self.author_id and self.author:
            return self.author.email
        return self.get_author_kind_display()


class FileChange(models.Model):
    """One file's change within a revision, with the full text before and after so it can
    be diffed and reverted."""

    class Op(models.TextChoices):
        CREATE = "create", "Created"
        UPDATE = "update", "Updated"
        MOVE = "move", "Moved"
        DELETE = "delete", "Deleted"

    revision = models.ForeignKey(Revision, on_delete=models.CASCADE, related_name="changes")
    filesystem = models.ForeignKey(FileSystem, on_delete=models.CASCADE, related_name="changes")
    op = models.CharField(max_length=10, choices=Op.choices)
    path = models.CharField(max_length=255, help_text="The path after the change (before it, for a delete).")
    old_path = models.CharField(max_length=255, blank=True, help_text="For a move: where the file was.")
    before = models.TextField(blank=True)
    after = models.TextField(blank=True)
    before_version = models.PositiveIntegerField(null=True, blank=True)
    after_version = models.PositiveIntegerField(null=True, blank=True)

    # Not columns: views set them on the changes they show (memory/diff_html.py), the rows for
    # memory/_diff.html and the HTML it renders.
    diff: list[Line] | list[Row]
    diff_html: SafeString

    class Meta:
        ordering = ["revision_id", "pk"]
        indexes = [
            models.Index(fields=["filesystem", "path", "-revision"]),
            models.Index(fields=["filesystem", "old_path", "-revision"]),
        ]

    def __str__(self):
        return f"{self.op} {self.path}"
