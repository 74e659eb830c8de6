"""The drafting app's models, one module per part: email drafts and their pairs (drafts.py), the
learner's records (learner.py)."""

from .drafts import Draft, DraftPair, SentMail
from .learner import Comparison, ContextInit, HistoryBlob, LearnerRun, Proposal

__all__ = ["Comparison", "ContextInit", "Draft", "DraftPair", "HistoryBlob", "LearnerRun", "Proposal", "SentMail"]
