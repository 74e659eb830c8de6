from django.conf import settings

from . import navigation as nav


def navigation(request):
    user = request.user
    return {
        "nav_items": nav.items_for(user) if user.is_authenticated else [],
        "model_offline": settings.MODEL_OFFLINE,
    }
