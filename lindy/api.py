"""Core JSON API: who am I, agent tasks and their events, meetings."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from ninja import Field, Router, Schema, Status
from ninja.pagination import paginate
from pydantic import field_validator

from . import permissions, selectors, services, task_annotations
from .api_errors import ApiError
from .models import AgentTask, User
from .pagination import BoundedLimitOffset

router: Router = Router(tags=["lindy"])  # typed: api_root imports it within an import cycle


class TeamRoleOut(Schema):
    id: int
    name: str
    role: str


class MeOut(Schema):
    id: int
    email: str
    name: str
    internal: bool
    support: bool
    superuser: bool
    teams: list[TeamRoleOut]


@router.get("/me", response=MeOut, summary="The signed-in user")
def me(request):
    user = request.user
    return {
        "id": user.pk,
        "email": user.email,
        "name": user.name,
        "internal": user.is_internal,
        "support": user.is_support,
        "superuser": user.is_superuser,
        "teams": [{"id": m.team_id, "name": m.team.name, "role": m.role} for m in selectors.memberships_of(user)],
    }


Actor = Literal["user", "assistant", "tool", "external"]


class TaskIn(Schema):
    title: str = Field(..., min_length=1, max_length=300)
    visibility: Literal["private", "public"] = "private"
    team_id: int | None = None


class EventIn(Schema):
    actor: Actor
    content: str = Field("", max_length=100_000)
    name: str = Field("", max_length=200)
    tool_name: str = Field("", max_length=100)
    tool_arguments: dict | None = None


class EventOut(Schema):
    id: int
    seq: int
    actor: str
    name: str
    content: str
    tool_name: str
    tool_arguments: dict | None
    created_at: datetime


class TaskOut(Schema):
    id: int
    team_id: int
    owner_email: str = Field(..., alias="owner.email")
    title: str
    visibility: str
    created_at: datetime
    updated_at: datetime


class TaskDetailOut(TaskOut):
    events: list[EventOut]
    annotations: dict[str, dict] = Field(
        default_factory=dict, description="What other apps record about the task, by key, for those allowed "
                                          "to read it (e.g. analyst_score: the analyst's latest score of a run).")

    @staticmethod
    def resolve_events(task: AgentTask) -> list:
        return list(task.events.all())

    @staticmethod
    def resolve_annotations(task: AgentTask, context) -> dict[str, dict]:
        return {a["key"]: a["data"] for a in task_annotations.for_task(context["request"].user, task)}


@router.post("/tasks", response={201: TaskDetailOut}, summary="Create an agent task")
def task_create(request, payload: TaskIn):
    team = permissions.team_for_new_object(request.user, payload.team_id)
    task = services.task_create(team=team, owner=request.user, title=payload.title, visibility=payload.visibility)
    return Status(201, task)


@router.get("/tasks", response=list[TaskOut], summary="Tasks you own and your teams' public tasks")
@paginate(BoundedLimitOffset)
def task_list(request):
    return selectors.task_list(request.user)


@router.get("/tasks/{task_id}", response=TaskDetailOut, summary="A task with its ordered events")
def task_get(request, task_id: int):
    return selectors.task_detail(request.user, task_id)


@router.post("/tasks/{task_id}/events", response={201: EventOut}, summary="Append an event to a task")
def task_event_add(request, task_id: int, payload: EventIn):
    task = selectors.task_detail(request.user, task_id)
    if not permissions.can_write_task(request.user, task):
        raise ApiError(403, "Only the task's owner can add events to it.")
    if payload.tool_arguments is not None and not payload.tool_name:
        raise ApiError(422, "tool_arguments needs a tool_name.")
    event = services.task_event_add(task=task, **payload.dict())
    return Status(201, event)


class MeetingIn(Schema):
    title: str = Field(..., min_length=1, max_length=300)
    notes: str = Field("", max_length=500_000)
    occurred_at: datetime
    shared_with: list[str] = Field(default_factory=list, max_length=200)
    public: bool = False
    team_id: int | None = None

    @field_validator("occurred_at")
    @classmethod
    def _as_utc(cls, value: datetime) -> datetime:
        # ISO 8601 allows offsets PostgreSQL refuses (beyond ±15:59): keep the instant, in UTC.
        if value.tzinfo is None:
            return value
        try:
            return value.astimezone(UTC)
        except OverflowError:  # year 1 or 9999 moved past the calendar's edge
            raise ValueError("occurred_at is out of range.") from None


class MeetingOut(Schema):
    id: int
    team_id: int
    owner_email: str = Field(..., alias="owner.email")
    title: str
    notes: str
    occurred_at: datetime
    shared_with: list[str]
    public: bool

    @staticmethod
    def resolve_shared_with(meeting) -> list[str]:
        # Uses the prefetched people (selectors.meeting_list) rather than a query per row.
        return sorted(person.email for person in meeting.shared_with.all())


@router.post("/meetings", response={201: MeetingOut}, summary="Record a meeting")
def meeting_create(request, payload: MeetingIn):
    team = permissions.team_for_new_object(request.user, payload.team_id)
    emails = sorted({email.strip().lower() for email in payload.shared_with})
    people = list(User.objects.filter(email__in=emails, memberships__team=team).distinct())
    unknown = sorted(set(emails) - {u.email for u in people})
    if unknown:
        raise ApiError(422, "shared_with must list members of the meeting's team.", [{"unknown": unknown}])
    meeting = services.meeting_create(
        team=team, owner=request.user, title=payload.title, notes=payload.notes,
        occurred_at=payload.occurred_at, shared_with=people, public=payload.public,
    )
    return Status(201, selectors.meeting_detail(request.user, meeting.pk))


@router.get("/meetings", response=list[MeetingOut], summary="Meetings you own, shared with you, or public")
@paginate(BoundedLimitOffset)
def meeting_list(request):
    return selectors.meeting_list(request.user)


@router.get("/meetings/{meeting_id}", response=MeetingOut, summary="One meeting")
def meeting_get(request, meeting_id: int):
    return selectors.meeting_detail(request.user, meeting_id)

