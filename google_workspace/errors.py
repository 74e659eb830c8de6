"""Errors of the Google connection."""


class GoogleError(Exception):
    """Google answered with an error, or could not be reached."""


class NotConnected(GoogleError):
    """Nothing to reach until someone connects it (again): no account, a revoked or expired grant.
    A status the user fixes, never retried. Hydration's sources raise it for any source whose
    account is missing (Slack too), so a run reports "not connected" in one way."""
