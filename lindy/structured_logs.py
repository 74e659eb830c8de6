"""Structured logs: one JSON object a line, searchable by request id, user id, task id and route.

django-structlog binds a request id to every line a request logs (a proxy's X-Request-ID is kept) and
the user's id (never an email: its USER_ID_FIELD is the primary key, and nothing here logs a body);
its Celery integration carries the request id in the headers of every task the request queues, so the
task's lines (with their task_id) share it. The standard library's records (Django's, Celery's, the
product's own logger.info calls) go through the same formatter, so every line is JSON.
"""

from __future__ import annotations

from typing import Any

import structlog

_SHARED: list[Any] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


def logging_config(*, level: str, json: bool) -> dict:
    renderer = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "structured": {
                "()": structlog.stdlib.ProcessorFormatter,
                "processors": [structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                               structlog.processors.format_exc_info, renderer],
                "foreign_pre_chain": [*_SHARED, structlog.stdlib.ExtraAdder()],
            },
        },
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "structured"}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # One handler per record: Django's own console handler would print each line twice.
            "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
            "django.db.backends": {"level": "WARNING"},
        },
    }


def configure() -> None:
    structlog.configure(
        processors=[*_SHARED, structlog.processors.StackInfoRenderer(),
                    structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=True,
    )


def bind_route(request, logger, response, log_kwargs, **kwargs) -> None:
    """At a request's end: its route (the URL pattern, no ids in it), and its id on the response so the
    access log and the client can quote it."""
    match = getattr(request, "resolver_match", None)
    if match is not None:
        structlog.contextvars.bind_contextvars(route=match.route)
        log_kwargs["route"] = match.route
    request_id = structlog.contextvars.get_contextvars().get("request_id")
    if request_id:
        response["X-Request-ID"] = request_id


def bind_route_early(request) -> None:
    """Bind the route as soon as the URL resolves, so lines the view logs carry it."""
    match = getattr(request, "resolver_match", None)
    if match is not None:
        structlog.contextvars.bind_contextvars(route=match.route)


class RouteMiddleware:
    """After URL resolution (process_view): every line the view logs names its route."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        bind_route_early(request)
        return None
