"""Test data, in one place."""

import factory
from django.utils import timezone

from lindy.models import AgentTask, Meeting, Membership, TaskEvent, Team, User

PASSWORD = "pw-for-tests-1"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    email = factory.Sequence(lambda n: f"person{n}@example.test")
    # Not Faker: a random "Janet" or "Carol" would turn up in pages that tests search for a body.
    name = factory.Sequence(lambda n: f"Quinn Testperson{n}")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team

    name = factory.Sequence(lambda n: f"Team {n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    team = factory.SubFactory(TeamFactory)
    user = factory.SubFactory(UserFactory)
    role = Membership.Role.MEMBER


class AgentTaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AgentTask

    team = factory.SubFactory(TeamFactory)
    owner = factory.SubFactory(UserFactory)
    title = factory.Sequence(lambda n: f"Task {n}")


class TaskEventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TaskEvent

    task = factory.SubFactory(AgentTaskFactory)
    seq = factory.Sequence(lambda n: n + 1)
    actor = TaskEvent.Actor.USER
    content = "Please do the thing."


class MeetingFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Meeting

    team = factory.SubFactory(TeamFactory)
    owner = factory.SubFactory(UserFactory)
    title = factory.Sequence(lambda n: f"Meeting {n}")
    notes = "We always deploy to staging first."
    occurred_at = factory.LazyFunction(timezone.now)


def member_of(team, role=Membership.Role.MEMBER, **user_kwargs) -> User:
    user = UserFactory(**user_kwargs)
    MembershipFactory(team=team, user=user, role=role)
    return user
