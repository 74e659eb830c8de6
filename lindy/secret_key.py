"""The SECRET_KEY of an installation that was given none: generated once into var/ and reused.

SECRET_KEY also keys the encryption of stored OAuth and bot tokens (lindy.encryption), so it
must survive restarts: a new key on every start would make every stored token unreadable.
The file is readable by its owner only. Web, worker and beat may start at the same moment:
the key is written to a temporary file and linked into place, so exactly one key wins and
nobody reads a half-written file.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

FILE_NAME = "secret_key"


def generated_secret_key(var_dir: Path) -> str:
    path = var_dir / FILE_NAME
    if not path.exists():
        temporary = var_dir / f".{FILE_NAME}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(64) + "\n")
            try:
                os.link(temporary, path)
            except FileExistsError:
                pass  # another process won the race: use its key
        finally:
            temporary.unlink(missing_ok=True)
    key = path.read_text().strip()
    if len(key) < 50:
        raise RuntimeError(f"{path} holds no usable secret key: delete it to generate a new one, or set SECRET_KEY.")
    return key


# Values copied from tutorials, templates and .env examples: long enough to pass a length check,
# public all the same. Compared casefolded with separators removed, so "Change-Me" counts too.
KNOWN_PLACEHOLDERS = frozenset({
    "changeme", "changemeinproduction", "changethis", "changethissecretkey", "secret", "secretkey",
    "mysecretkey", "yoursecretkey", "yoursecretkeyhere", "yoursecretkeygoeshere", "supersecret",
    "supersecretkey", "notsecret", "insecure", "development", "devsecretkey", "dev", "test",
    "testsecretkey", "password", "placeholder", "replaceme", "xxx", "todo", "lindy", "lindydemo",
    "django", "djangosecretkey", "djangoinsecure",
})
MIN_LENGTH = 50
MIN_UNIQUE_CHARACTERS = 5
# A key that is one short stretch said again ("changeme" seven times, "0123456789" five) is as
# guessable as the stretch: whatever its length, its period must be at least this long.
MIN_PERIOD = 25


def _period(text: str) -> int:
    """The length of the shortest stretch `text` repeats (a last, partial copy allowed)."""
    for size in range(1, len(text)):
        if all(text[i] == text[i % size] for i in range(size, len(text))):
            return size
    return len(text)


def secret_key_weakness(key: str) -> str | None:
    """Why `key` may not sign production sessions, or None.

    Django's own deploy check (security.W009) names the same three classes, but only as a warning
    that `check --deploy` prints; here start-up stops.
    """
    key = key.strip()  # spaces around a placeholder add nothing an attacker must guess
    folded = "".join(ch for ch in key.casefold() if ch.isalnum())
    if folded in KNOWN_PLACEHOLDERS or key.startswith("django-insecure-"):
        return "SECRET_KEY is a known placeholder"
    if folded and folded[: _period(folded)] in KNOWN_PLACEHOLDERS:
        return "SECRET_KEY is a known placeholder, repeated"
    if len(key) < MIN_LENGTH:
        return f"SECRET_KEY has {len(key)} characters; at least {MIN_LENGTH} are required"
    if len(set(key)) < MIN_UNIQUE_CHARACTERS:
        return f"SECRET_KEY uses fewer than {MIN_UNIQUE_CHARACTERS} distinct characters"
    if _period(folded or key) < MIN_PERIOD:
        return f"SECRET_KEY repeats a stretch shorter than {MIN_PERIOD} characters"
    return None
