"""Every write of the drafting app (DESIGN.md: services are the only code that writes rows,
enqueues tasks or calls an outside system)."""

from .context import PATH as CONTEXT_PATH
from .context import ContextDoc, context_read, context_write
from .replay import draft_replay, draft_replay_reply

__all__ = ["CONTEXT_PATH", "ContextDoc", "context_read", "context_write", "draft_replay", "draft_replay_reply"]
