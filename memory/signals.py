"""Every team and every user gets a memory file system the moment they are created."""

from __future__ import annotations

from django.db.models.signals import post_save
from django.dispatch import receiver

from lindy.models import Team, User

from . import services


@receiver(post_save, sender=Team, dispatch_uid="memory.team_filesystem")
def team_created(sender, instance, created, raw=False, **kwargs):
    if created and not raw:
        services.filesystem_for_team(instance)


@receiver(post_save, sender=User, dispatch_uid="memory.user_filesystem")
def user_created(sender, instance, created, raw=False, **kwargs):
    if created and not raw:
        services.filesystem_for_user(instance)
