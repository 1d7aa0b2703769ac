"""Where the server URL and the token come from: the `--url`/`--token` flags, else the
EVALSERVER_URL/EVALSERVER_TOKEN environment variables, else the per-user file `login` writes.

The file is $XDG_CONFIG_HOME/evalserver/config.json (~/.config/evalserver/config.json), made
with mode 0600 in a 0700 folder: it holds a credential. Its token is used only against the
server it was issued by, so that `--url` to another server never sends it there.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import UsageError

DEFAULT_URL = "http://127.0.0.1:8000"


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "evalserver" / "config.json"


def config_read() -> dict[str, Any]:
    """The stored {url, token, username}; {} when there is no file."""
    path = config_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: unreadable ({exc}); remove it and log in again") from exc
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a JSON object; remove it and log in again")
    return data


def config_write(*, url: str, token: str, username: str) -> Path:
    """Writes the file whole (a temporary file renamed over it), readable by its owner only."""
    path = config_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # exact, whatever the umask or an older file's mode
        with os.fdopen(fd, "w") as handle:
            json.dump({"url": url, "token": token, "username": username}, handle, indent=2)
            handle.write("\n")
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


def config_remove() -> bool:
    """Deletes the file; False when there was none."""
    try:
        config_path().unlink()
    except FileNotFoundError:
        return False
    return True


@dataclass(frozen=True)
class Settings:
    url: str
    token: str | None
    token_source: str  # "flag", "env", "config" or "none"


def settings_resolve(*, url: str | None = None, token: str | None = None) -> Settings:
    stored = config_read()
    resolved = (url or os.environ.get("EVALSERVER_URL") or stored.get("url")
                or DEFAULT_URL).rstrip("/")
    if token:
        return Settings(resolved, token, "flag")
    if os.environ.get("EVALSERVER_TOKEN"):
        return Settings(resolved, os.environ["EVALSERVER_TOKEN"], "env")
    if stored.get("token") and str(stored.get("url", "")).rstrip("/") == resolved:
        return Settings(resolved, str(stored["token"]), "config")
    return Settings(resolved, None, "none")
