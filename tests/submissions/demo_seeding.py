"""`manage.py seed_demo` run in-process, for the seed_demo tests."""

from __future__ import annotations

import io

from django.core.management import call_command


def seed_demo(*args: str) -> str:
    """Run `manage.py seed_demo` with `args`; returns what it printed."""
    out = io.StringIO()
    call_command("seed_demo", *args, stdout=out, no_color=True)
    return out.getvalue()
