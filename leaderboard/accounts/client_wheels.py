"""The client's wheels in the folder /client/ offers them from (EVALSERVER_CLIENT_WHEEL_DIR):
found by name (`evalserver_client-<version>-py3-none-any.whl`, what `pip wheel` of
clients/python writes), the newest version first. Nothing else in the folder is served."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

WHEEL_NAME = re.compile(r"evalserver_client-([0-9][0-9A-Za-z.+_]*)-py3-none-any\.whl")


@dataclass(frozen=True)
class ClientWheel:
    path: Path
    version: str
    size: int

    @property
    def name(self) -> str:
        return self.path.name


def _version(name_match: re.Match[str]) -> Version | None:
    """The wheel's version as PEP 440 orders it (0.10.0 after 0.9.1, 0.3.0rc1 before 0.3.0);
    None for a name whose version is not one."""
    try:
        return Version(name_match[1])
    except InvalidVersion:
        return None


def client_wheels(*, folder: Path) -> list[ClientWheel]:
    """The wheels in `folder`, newest version first; none when it does not exist."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    found = []
    for path in entries:
        match = WHEEL_NAME.fullmatch(path.name)
        version = _version(match) if match else None
        if match and version is not None and path.is_file():
            found.append((version, ClientWheel(path, match[1], path.stat().st_size)))
    return [wheel for _, wheel in sorted(found, key=lambda pair: pair[0], reverse=True)]


def client_wheel_named(*, folder: Path, name: str) -> ClientWheel | None:
    return next((wheel for wheel in client_wheels(folder=folder) if wheel.name == name), None)
