from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from . import routing
from .models import ModelChoice, PromptVariant, Provider, Rollout, Route, Target


@receiver([post_save, post_delete], sender=Route)
@receiver([post_save, post_delete], sender=Target)
@receiver([post_save, post_delete], sender=Provider)
@receiver([post_save, post_delete], sender=Rollout)
@receiver([post_save, post_delete], sender=ModelChoice)
@receiver([post_save, post_delete], sender=PromptVariant)
def routing_changed(sender, **kwargs):
    routing.invalidate()
