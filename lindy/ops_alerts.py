"""Where operational alerts are told: one list of ways (email to support, a post in the ops Slack
channel...) that every app's alerts go through, so they all reach the same people.

The app that owns the people and channels (channels_app: support staff, CHANNELS_ALERT_EMAILS,
the ops Slack channel) registers its ways here from its AppConfig.ready; an app that raises
alerts (the validator's block-rate anomalies) tells them through `ways()` without importing it
(the import layers keep the two apart).

A way is `send(subject, body) -> bool`: True when it was sent, False when the way is not set up
(nobody to tell), an exception when sending failed (the caller retries that way only).
"""

from __future__ import annotations

from collections.abc import Callable

Way = Callable[[str, str], bool]

_WAYS: dict[str, Way] = {}


def register(name: str, send: Way) -> None:
    _WAYS[name] = send


def ways() -> dict[str, Way]:
    """The registered ways, by name, in a stable order."""
    return {name: _WAYS[name] for name in sorted(_WAYS)}
