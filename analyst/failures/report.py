"""The ready-to-fix report ("Copy as issue"): markdown with a title, what users saw, steps to
reproduce from the log, the frames with their code, the suspected cause and a test to write first."""

from __future__ import annotations

from ..models import FailureGroup


def _fence(text: str) -> str:
    return "```python\n" + text.replace("```", "`\u200b``") + "\n```"


def issue_markdown(*, group: FailureGroup, example, frames: list[dict], steps: list[str] | None,
                   triage: dict | None, users: int, teams: int) -> tuple[str, str]:
    """(title, body). `steps` None: the reader may not read the example's log (the body says so);
    `triage` None likewise (it was written from that log)."""
    title = f"{group.exc_type} in {group.culprit}" if group.culprit else group.exc_type
    lines = [
        f"**{group.count} failure{'s' if group.count != 1 else ''}** of {group.kind_label} jobs for {users} "
        f"user{'s' if users != 1 else ''} in {teams} team{'s' if teams != 1 else ''}, first seen "
        f"{group.first_seen:%Y-%m-%d %H:%M} UTC (version {group.first_version}), last seen "
        f"{group.last_seen:%Y-%m-%d %H:%M} UTC (version {group.last_version}). Status: {group.get_status_display()}.",
        "", "## What users saw", "",
        f"The {group.kind_label.lower()} ended in `{example.exc_type}: {example.message}`"
        + (f" (route `{example.route}`" + (f", target `{example.target}`" if example.target else "") + ")"
           if example.route else "") + ".",
        "", "## Steps to reproduce (from the log)", "",
    ]
    if steps is None:
        lines.append("_The log of this example is not yours to read._")
    else:
        lines += [f"{n}. {step}" for n, step in enumerate(steps, 1)] or ["_The log holds no step before the failure._"]
        lines.append(f"{len(steps) + 1}. It raises `{example.exc_type}`.")
    lines += ["", "## Frames (innermost last), with the running code", ""]
    for frame in frames:
        lines.append(f"- `{frame['file']}:{frame['lineno']}` in `{frame['function']}`"
                     + (" (the running code changed since: the line moved)" if frame.get("moved") else ""))
        if frame.get("lines"):
            lines += ["", _fence("\n".join(f"{n:>5}{'>' if here else ' '} {text}" for n, text, here in frame["lines"])), ""]
    lines += ["", "## Suspected cause (the analyst's model)", ""]
    if triage and triage.get("suspected_cause"):
        lines += [triage["suspected_cause"], "", f"Smallest change: {triage.get('smallest_change', '')}"]
    else:
        lines.append("_No triage yet._" if triage is not None else "_Written from the log, which is not yours to read._")
    lines += ["", "## A test to write first", ""]
    if triage and triage.get("test_first"):
        lines.append(triage["test_first"])
    else:
        innermost = frames[-1] if frames else None
        lines.append(f"Call `{innermost['module']}.{innermost['function']}` with the input of the logged run and "
                     f"assert it does not raise `{group.exc_type}`." if innermost else
                     f"Reproduce the steps above and assert the job does not raise `{group.exc_type}`.")
    lines += ["", f"_Failure group #{group.pk} (fingerprint `{group.fingerprint[:12]}`), filed from Lindy's analyst._"]
    return title, "\n".join(lines)
