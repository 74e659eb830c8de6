"""Every write of the drafting app (DESIGN.md: services are the only code that writes rows,
enqueues tasks or calls an outside system)."""

from .context import PATH as CONTEXT_PATH
from .context import ContextDoc, context_read, context_write
from .inbound import Retry, inbound_process, item_process, items_enqueue, sent_process, sweep
from .pairs import METRIC, pair_create
from .replay import draft_replay, draft_replay_reply

__all__ = ["CONTEXT_PATH", "METRIC", "ContextDoc", "Retry", "context_read", "context_write", "draft_replay",
           "draft_replay_reply", "inbound_process", "item_process", "items_enqueue", "pair_create", "sent_process",
           "sweep"]
