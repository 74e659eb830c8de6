"""A file system gets its hydration slot when it is created, so the dispatch tick never has to
look for file systems without one (that scan grows with every file system)."""

from __future__ import annotations

from django.db.models.signals import post_save
from django.dispatch import receiver

from memory.models import FileSystem


@receiver(post_save, sender=FileSystem, dispatch_uid="hydration.schedule_on_filesystem_create")
def _schedule_new_filesystem(sender, instance: FileSystem, created: bool, raw: bool = False, **kwargs) -> None:
    if created and not raw:
        from . import services

        # In the same transaction: a file system rolled back takes its slot with it.
        services.schedule_ensure(filesystem_id=instance.pk)
