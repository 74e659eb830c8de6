"""The pre-send gate: what every send to a user is checked against before it goes."""

from __future__ import annotations

from ..models import OptOut


def opt_out_for(*, phone: str, channel: str) -> OptOut | None:
    """The phone's open opt-out of the channel, if it has one."""
    return OptOut.objects.filter(phone=phone, channel=channel, opted_in_at__isnull=True).first()
