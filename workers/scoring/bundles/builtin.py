"""The server's own benchmarks: the bundles kept in the repository (`benchmarks/*.toml`).

The one place outside the database that knows which benchmarks ship with the server; every
fact about them is in their manifests (docs/bundles.md). Django-free: `python -m
workers.score` and the inference code look built-in benchmarks up here, the web side reads
the database rows `load_benchmarks` compiled from the same bundles.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .manifest import read_manifest
from .model import Bundle
from .toml_limits import ManifestLimits

# The server's own manifests are parsed in this process (they are checked against the same
# limits of what a manifest holds).
_TRUSTED = ManifestLimits(isolated=False)

BUILTIN_DIR = Path(__file__).resolve().parents[3] / "benchmarks"


def builtin_bundle_paths() -> list[Path]:
    """The bundles kept in the repository (benchmarks/*.toml), by file name."""
    return sorted(BUILTIN_DIR.glob("*.toml"))


@lru_cache(maxsize=1)
def _builtin_bundles() -> dict[str, Bundle]:
    bundles = (read_manifest(path, limits=_TRUSTED) for path in builtin_bundle_paths())
    return {bundle.slug: bundle for bundle in bundles}


def builtin_slugs() -> tuple[str, ...]:
    """The slugs of the built-in benchmarks, sorted."""
    return tuple(sorted(_builtin_bundles()))


def builtin_bundle(slug: str) -> Bundle:
    """The built-in bundle of this slug (KeyError naming the known ones if none)."""
    bundles = _builtin_bundles()
    try:
        return bundles[slug]
    except KeyError:
        raise KeyError(
            f"unknown benchmark {slug!r}; built in: {', '.join(sorted(bundles))}"
        ) from None
