"""Offline rules for analyst.triage: a suspected cause and a smallest change from the exception's
type and message and the innermost product frame's line, deterministic. Honest about what it is:
a rule per kind of error, not a reading of the code."""

from __future__ import annotations

import re

from router.offline import OfflineReply, offline_policy, tool_call

from .prompts import ROUTE, TOOL, parse_payload


def _rule(exc_type: str, message: str) -> tuple[str, str]:
    """(what went wrong at the line, the guard to add)."""
    short = exc_type.rsplit(".", 1)[-1]
    attr = re.search(r"'(\w+)' object has no attribute '(\w+)'", message)
    if short == "AttributeError" and attr:
        return (f"a value the line expects to be an object with `.{attr.group(2)}` was a `{attr.group(1)}`: the "
                "input did not have the shape the code assumes",
                f"check the value's type before calling `.{attr.group(2)}` and treat another shape as malformed input")
    if short == "KeyError":
        return (f"the input has no key {message or '(the one read)'}: the code indexes it as always present",
                "read it with `.get()` and handle its absence as malformed input")
    if short in ("TypeError", "ValueError") or "JSONDecodeError" in short:
        return ("the line received a value of the wrong type or form",
                "validate the value where it enters (its parser) and reject it with a clear error")
    if "Timeout" in short or "Connection" in short:
        return ("a call to an outside service did not answer in time", "retry with backoff, bounded, and record it")
    if "DatabaseError" in short or "OperationalError" in short or "IntegrityError" in short:
        return ("the database refused the statement", "check the query's assumptions (rows present, unique keys)")
    return ("the line raised on the input of this run", "guard the line against the input of this run")


def triage(data: dict) -> dict:
    exception = data.get("exception") or {}
    exc_type, message = str(exception.get("type") or "Exception"), str(exception.get("message") or "")
    frames = data.get("frames") or []
    where = frames[-1] if frames else {}
    place = f"{where.get('file', '?')}:{where.get('line', '?')} in {where.get('function', '?')}" if where else "the job"
    cause, change = _rule(exc_type, message)
    job = exception.get("job") or "job"
    return {
        "suspected_cause": f"{exc_type} at {place}: {cause}. (offline rules)",
        "smallest_change": f"In {where.get('function', 'the innermost product frame')}, {change}; the {job} then "
                           "records the failure of that one input and goes on. (offline rules)",
        "test_first": f"Feed {where.get('function', 'the job')} the input of the logged run and assert it no longer "
                      f"raises {exc_type.rsplit('.', 1)[-1]}, recording the input as malformed instead.",
    }


@offline_policy(ROUTE)
def triage_policy(request) -> OfflineReply:
    return OfflineReply(tool_calls=[tool_call(TOOL, triage(parse_payload(request.last_user_text()) or {}))])
