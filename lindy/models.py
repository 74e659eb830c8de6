"""The assistant's core domain: people, teams, the task history, meetings and the audit log."""

import hashlib
from typing import ClassVar

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone

from . import tool_registry
from .audit_reading import changes, label_of


class UserManager(BaseUserManager):
    use_in_migrations = True

    def _create_user(self, email, password, **extra):
        if not email:
            raise ValueError("An email address is required")
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_user(self, email, password=None, **extra):
        extra.setdefault("is_staff", False)
        extra.setdefault("is_superuser", False)
        return self._create_user(email, password, **extra)

    def create_superuser(self, email, password=None, **extra):
        extra.setdefault("is_staff", True)
        extra.setdefault("is_superuser", True)
        return self._create_user(email, password, **extra)

    def get_by_natural_key(self, email):
        return self.get(email__iexact=email)


class User(AbstractBaseUser, PermissionsMixin):
    """A person who signs in by email."""

    email = models.EmailField(unique=True)
    name = models.CharField(
        "display name", max_length=150, blank=True,
        help_text="Shown wherever the product names this person; blank shows the email's first part.",
    )
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField(default=False, help_text="May sign in to the Django admin.")
    is_internal = models.BooleanField(
        default=False, help_text="Works at Lindy: gets model rollouts first."
    )
    is_support = models.BooleanField(
        default=False,
        help_text="Support staff: sees channel health across teams, never memory, messages or actions.",
    )
    date_joined = models.DateTimeField(default=timezone.now)

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    class Meta:
        ordering = ["email"]

    def __str__(self):
        return self.email

    @property
    def display_name(self) -> str:
        return self.name or self.email.split("@")[0]


class Team(models.Model):
    name = models.CharField(max_length=120, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    members: "models.ManyToManyField[User, Membership]" = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="teams"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        MEMBER = "member", "Member"
        ADMIN = "admin", "Admin"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="one_membership_per_team")]

    def __str__(self):
        return f"{self.user} in {self.team} ({self.role})"


class ApiToken(models.Model):
    """A bearer token for machine clients. Only a hash is stored; the token is shown once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, help_text="First characters, to tell tokens apart.")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.prefix}… ({self.user})"

    @staticmethod
    def hash_key(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()


class AgentTask(models.Model):
    """One task the assistant performed for a user: the history the validator reads."""

    class Visibility(models.TextChoices):
        PRIVATE = "private", "Private"
        PUBLIC = "public", "Public (whole team)"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="tasks")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tasks")
    title = models.CharField(max_length=300)
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.PRIVATE)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["team", "visibility", "updated_at"]),
            models.Index(fields=["owner", "updated_at"]),
        ]

    def __str__(self):
        return self.title


class TaskEvent(models.Model):
    class Actor(models.TextChoices):
        USER = "user", "The user"
        ASSISTANT = "assistant", "The assistant"
        TOOL = "tool", "A tool result"
        EXTERNAL = "external", "An external party"
        # Lindy itself acting (e.g. sending a validator's suggestion back to the task): never the
        # user's words, whatever it says.
        SYSTEM = "system", "Lindy (system note)"

    task = models.ForeignKey(AgentTask, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField(help_text="Order within the task, from 1.")
    actor = models.CharField(max_length=10, choices=Actor.choices)
    name = models.CharField(max_length=200, blank=True, help_text="Who, for an external party (e.g. a sender).")
    content = models.TextField(blank=True)
    tool_name = models.CharField(max_length=100, blank=True)
    tool_arguments = models.JSONField(null=True, blank=True)
    # The router's ModelCall whose answer this event is (an assistant's text or proposal) or
    # answers (the proposal's result): written by the agent loop; empty for events people,
    # third parties and Lindy wrote. An id, not a key: the core knows no router model.
    model_call_id = models.BigIntegerField(null=True, blank=True, help_text="The model call that wrote it.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["task", "seq"]
        constraints = [models.UniqueConstraint(fields=["task", "seq"], name="event_seq_unique_per_task")]

    def __str__(self):
        return f"#{self.seq} {self.actor}: {self.content[:40]}"

    @property
    def tool_label(self) -> str:
        """The tool in words ("Send an email"), for pages."""
        return tool_registry.label(self.tool_name) if self.tool_name else ""

    @property
    def argument_rows(self) -> list[tuple[str, object]]:
        """The arguments as (name in words, value) rows, for pages."""
        return tool_registry.readable_rows(self.tool_arguments)


class Meeting(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="meetings")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="meetings")
    title = models.CharField(max_length=300)
    notes = models.TextField(blank=True)
    occurred_at = models.DateTimeField(db_index=True)
    shared_with = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="shared_meetings")
    public = models.BooleanField(default=False, help_text="In the team's public meeting library.")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-occurred_at"]
        indexes = [models.Index(fields=["team", "public", "occurred_at"])]

    def __str__(self):
        return self.title


class AuditEntry(models.Model):
    """One change to who may do what, or to what the assistant may do or spend: who made it, when,
    the object, and its fields before and after. The product's one audit log, written only through
    `lindy.audit.record`, in the transaction of the change. `team` is the team the change belongs to
    (its admins see it); empty for changes that belong to no team (model routing, a person's own
    connections), which superusers see."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="Empty when the system made the change.",
    )
    actor_label = models.CharField(max_length=200, blank=True,
                                   help_text="Who it was when written, kept after the account is deleted.")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=60, help_text="e.g. membership.role_set, rollout.started")
    object_type = models.CharField(max_length=40, help_text="e.g. membership, route, target, opt_out")
    object_id = models.CharField(max_length=64)
    object_repr = models.CharField(max_length=200, blank=True)
    before = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder, help_text="Empty for a creation.")
    after = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder, help_text="Empty for a removal.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name_plural = "audit entries"
        indexes = [
            models.Index(fields=["created_at", "id"], name="audit_time"),
            models.Index(fields=["team", "created_at", "id"], name="audit_team_time"),
            models.Index(fields=["object_type", "object_id", "created_at"], name="audit_object_time"),
            models.Index(fields=["action", "created_at"], name="audit_action_time"),
        ]

    def __str__(self):
        return f"{self.action} {self.object_type}:{self.object_id}"

    @property
    def changes(self):
        """Each field that changed, before and after."""
        return changes(self)

    def get_action_display(self) -> str:
        return label_of(self.action)
