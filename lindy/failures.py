"""Failures captured where they happen: the one door every job that ends in an exception reports
through (agent runs, hydration runs and sources, drafting steps, learner runs, validator calls,
eval runs, Celery tasks).

The core cannot know who keeps the record (the analyst, above every app that fails): the
recorder subscribes here from its AppConfig.ready, the way the other registries work, so no
lower app imports it. A capture never raises into the failing code: the failure it reports
stays the caller's to handle.

    with failures.capturing("hydration_run", run=f"hydration run {run.pk}", user_id=..., team_id=...):
        ...

An exception is recorded once, however many capture points it passes on its way up (the
hydration run's, then Celery's task_failure): the first one, closest to the work, keeps it.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import subprocess
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

logger = logging.getLogger(__name__)

KINDS = {
    "agent_run": "Agent run",
    "tool_call": "Tool call",
    "hydration_run": "Hydration run",
    "hydration_source": "Hydration source",
    "drafting_step": "Drafting step",
    "learner_run": "Learner run",
    "validator_call": "Validator call",
    "eval_run": "Eval run",
    "model_call": "Model call",
    "celery_task": "Celery task",
}
_CAPTURED = "_lindy_failure_captured"
MAX_FRAMES = 40
MAX_MESSAGE = 500


@dataclass
class Frame:
    module: str
    function: str
    file: str  # relative to the product's root when it is the product's, else as Python names it
    lineno: int
    line: str
    product: bool

    def as_dict(self) -> dict:
        return {"module": self.module, "function": self.function, "file": self.file, "lineno": self.lineno,
                "line": self.line, "product": self.product}


@dataclass
class Failure:
    """What a capture point knows. `log`: the events before the failure, for jobs whose log is not
    an agent task's (a task's is read from its events up to `through_seq`)."""

    kind: str
    exc_type: str
    message: str  # redacted
    frames: list[Frame]
    version: str
    route: str = ""
    target: str = ""
    task_id: int | None = None
    through_seq: int | None = None
    run: str = ""
    user_id: int | None = None
    team_id: int | None = None
    log: list[dict] = field(default_factory=list)

    @property
    def product_frames(self) -> list[Frame]:
        return [f for f in self.frames if f.product]

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.exc_type, self.product_frames)


Recorder = Callable[[Failure], None]
_RECORDERS: list[Recorder] = []


def subscribe(recorder: Recorder) -> None:
    if recorder not in _RECORDERS:
        _RECORDERS.append(recorder)


# --- Version ------------------------------------------------------------------------------------

@functools.cache
def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=settings.BASE_DIR, capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def product_version() -> str:
    """LINDY_VERSION when set (a deployment without its .git names its commit there), else the
    git commit of the running code, else the release string."""
    return settings.LINDY_VERSION or _git_commit() or settings.LINDY_RELEASE


# --- Redaction ----------------------------------------------------------------------------------

_SECRET_PATTERNS = [
    re.compile(r"\b(sk-ant-[\w-]+|sk-[\w-]{16,}|xox[abprs]-[\w-]+|ghp_\w+|github_pat_\w+|ya29\.[\w.-]+|AKIA[0-9A-Z]{16})"),
    re.compile(r"(?i)\bbearer\s+[^\s'\"]{6,}"),
    re.compile(r"(?i)\b\w*(token|key|secret|password|authorization)['\"]?\s*[:=]\s*['\"]?[^\s'\",}]{6,}"),
    re.compile(r"\beyJ[\w-]+\.[\w-]+\.[\w-]+"),  # a JWT
    re.compile(r"\b[A-Za-z0-9+/_-]{32,}={0,2}"),  # long base64 / hex: keys, tokens, encoded bodies
]
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")
# A quoted string longer than this is a body (an email, a message, a payload), not an identifier.
_QUOTED = re.compile(r"(['\"])((?:(?!\1).){41,}?)\1", re.S)


def _configured_secrets() -> list[str]:
    """The values of settings named like secrets (read each time: settings change in tests)."""
    names = [n for n in dir(settings) if n.isupper() and re.search(r"KEY|TOKEN|SECRET|PASSWORD", n)]
    values = {v for v in (getattr(settings, n, "") for n in names) if isinstance(v, str) and len(v) >= 8}
    return sorted(values, key=len, reverse=True)


def redact(text: str, limit: int = MAX_MESSAGE) -> str:
    """An exception's message with the bodies and secrets taken out: configured secrets, token
    shapes, `key=value` credentials, email addresses and any long quoted text (a body, a payload)."""
    text = str(text or "")
    for secret in _configured_secrets():
        text = text.replace(secret, "[secret]")
    text = _QUOTED.sub(lambda m: f"{m.group(1)}[{len(m.group(2))} chars]{m.group(1)}", text)
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub("[secret]", text)
    text = _EMAIL.sub("[email]", text)
    return text if len(text) <= limit else text[:limit] + "…"


# --- Frames and fingerprint ---------------------------------------------------------------------

def _root() -> Path:
    return Path(settings.BASE_DIR).resolve()


def _product_file(filename: str) -> str | None:
    """The frame's file relative to the product's root, when it is the product's own code (not a
    library, not the tests)."""
    try:
        path = Path(filename).resolve()
        relative = path.relative_to(_root())
    except (ValueError, OSError):
        return None
    first = relative.parts[0] if relative.parts else ""
    if first.startswith(".") or first in ("tests", "var", "bench") or "site-packages" in relative.parts:
        return None
    return relative.as_posix() if path.suffix == ".py" else None


def frames_of(exc: BaseException) -> list[Frame]:
    frames = []
    for summary in traceback.extract_tb(exc.__traceback__)[-MAX_FRAMES:]:
        relative = _product_file(summary.filename)
        module = relative.removesuffix(".py").replace("/", ".").removesuffix(".__init__") if relative else \
            Path(summary.filename).stem
        frames.append(Frame(module=module, function=summary.name, file=relative or summary.filename,
                            lineno=summary.lineno or 0, line=(summary.line or "").strip(), product=relative is not None))
    return frames


def normalise(line: str) -> str:
    """A frame's line as the fingerprint reads it: whitespace collapsed, literals' values dropped,
    so an edit elsewhere in the file (moving the line) or a changed constant keeps the group."""
    line = re.sub(r"(['\"]).*?\1", "''", line)
    line = re.sub(r"\b\d+(\.\d+)?\b", "0", line)
    return " ".join(line.split())


def fingerprint(exc_type: str, product_frames: list[Frame]) -> str:
    parts = [exc_type] + [f"{f.module}:{f.function}:{normalise(f.line)}" for f in product_frames]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def exc_type_name(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


# --- Capture ------------------------------------------------------------------------------------

def captured(exc: BaseException) -> bool:
    return bool(getattr(exc, _CAPTURED, False))


def capture(exc: BaseException, *, kind: str, route: str = "", target: str = "", task_id: int | None = None,
            through_seq: int | None = None, run: str = "", user_id: int | None = None, team_id: int | None = None,
            log: list[dict] | None = None) -> Failure | None:
    """Report `exc` to every recorder, once. Never raises. Returns the failure (None when already
    captured or nobody records)."""
    if captured(exc):
        return None
    try:
        setattr(exc, _CAPTURED, True)
    except (AttributeError, TypeError):  # an exception type that takes no attributes: recorded each time
        pass
    if kind not in KINDS:
        logger.warning("failure of unknown kind %r captured", kind)
    try:
        failure = Failure(
            kind=kind, exc_type=exc_type_name(exc), message=redact(str(exc)), frames=frames_of(exc),
            version=product_version(), route=route, target=target, task_id=task_id, through_seq=through_seq,
            run=run, user_id=user_id, team_id=team_id,
            log=[{k: redact(str(v), 1000) for k, v in entry.items()} for entry in (log or [])][-50:],
        )
    except Exception:
        logger.exception("could not describe a %s failure", kind)
        return None
    for recorder in list(_RECORDERS):
        try:
            recorder(failure)
        except Exception:  # the failure being reported stays the caller's; this one is only logged
            logger.exception("a failure recorder failed on a %s failure", kind)
    return failure


@contextmanager
def capturing(kind: str, **context) -> Iterator[None]:
    """Capture any exception leaving the block, then let it go on its way."""
    try:
        yield
    except Exception as exc:
        capture(exc, kind=kind, **context)
        raise


def captures(kind: str, context: Callable[..., dict] | None = None) -> Callable:
    """Decorate a job's entry point: an exception leaving it is captured with `context(*args,
    **kwargs)` (route, task_id, user_id...), then raised on."""

    def decorator(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            try:
                return func(*args, **kwargs)
            except Exception as exc:
                try:
                    found = context(*args, **kwargs) if context else {}
                except Exception:  # a context that cannot be read still leaves the failure recorded
                    found = {}
                capture(exc, kind=kind, **found)
                raise

        return wrapper

    return decorator


def ids_of(**objects) -> dict:
    """{"user_id": user.pk, ...} for the objects given (None stays None): a capture's context."""
    return {f"{name}_id": getattr(value, "pk", value) for name, value in objects.items()}
