"""How the managed iMessage API's webhooks are signed, chosen by settings.LINQ_WEBHOOK_SCHEME:

- "hmac" (the default): X-Webhook-Timestamp and X-Webhook-Signature, a hex HMAC-SHA256 of
  "{timestamp}.{body}" with the shared secret (linq.verify_webhook).
- "standard": Standard Webhooks (standardwebhooks.com): webhook-id, webhook-timestamp and
  webhook-signature ("v1,<base64>", several allowed while keys rotate) over
  "{id}.{timestamp}.{body}", with a "whsec_<base64>" secret, verified by the `standardwebhooks`
  library (five minutes' tolerance either way).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from django.conf import settings
from standardwebhooks import Webhook, WebhookVerificationError

from . import linq

HMAC = "hmac"
STANDARD = "standard"

logger = logging.getLogger(__name__)


def verify_standard(*, raw_body: bytes, headers: Mapping[str, str]) -> bool:
    """Standard Webhooks: a missing, malformed, stale or wrong signature is a plain no."""
    secret = settings.LINQ_WEBHOOK_SECRET
    if not secret:
        return False
    try:
        verifier = Webhook(secret)
    except Exception:  # not base64, or empty after the whsec_ prefix: every request is refused
        logger.error("LINQ_WEBHOOK_SECRET is not a Standard Webhooks secret (whsec_<base64>)")
        return False
    wanted = {name: headers.get(name) or "" for name in ("webhook-id", "webhook-timestamp", "webhook-signature")}
    try:
        verifier.verify(raw_body, wanted, json_parse=False)
    # The library raises its own error for what it checks, and lets a body that is not UTF-8 or a
    # signature that is not "v1,<base64>" through as a ValueError (binascii.Error is one).
    except (WebhookVerificationError, ValueError):
        return False
    return True


def verify_request(*, raw_body: bytes, headers: Mapping[str, str]) -> bool:
    """Verify a webhook request with the scheme the provider was set up with."""
    if settings.LINQ_WEBHOOK_SCHEME == STANDARD:
        return verify_standard(raw_body=raw_body, headers=headers)
    return linq.verify_webhook(raw_body=raw_body, timestamp=headers.get("X-Webhook-Timestamp"),
                               signature=headers.get("X-Webhook-Signature"))
