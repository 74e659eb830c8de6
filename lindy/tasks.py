from celery import shared_task

from . import services


@shared_task(name="lindy.tasks.heartbeat", acks_late=True, time_limit=30, soft_time_limit=25)
def heartbeat() -> str:
    return services.heartbeat_record().isoformat()


@shared_task(name="lindy.tasks.ping", acks_late=True, time_limit=30, soft_time_limit=25)
def ping(token: str) -> str:
    """Round-trip check used by the health page and tests: writes the token to the cache."""
    services.ping_record(token=token)
    return token
