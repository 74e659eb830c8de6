from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from . import routing
from .models import Route, Target


@receiver([post_save, post_delete], sender=Route)
@receiver([post_save, post_delete], sender=Target)
def routing_changed(sender, **kwargs):
    routing.invalidate()
