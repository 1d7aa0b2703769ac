"""One Python process that imports the settings afresh for each environment it is sent: the
settings tests' cheap stand-in for starting `python -c "import django; django.setup(); ..."` once
per environment (about half a CPU-second each, nearly all of it setting up every app, which
reading a setting does not need).

For each request the probe replaces os.environ with exactly the environment sent, forgets every
`evalserver.settings*` module, and builds `django.conf.Settings` (the object behind
`django.conf.settings`) from DJANGO_SETTINGS_MODULE: the settings package runs again from its
first line under that environment, as in a new process. A settings error (the
ImproperlyConfigured a bad value raises) comes back as that request's failure, with its
traceback; the next request starts afresh all the same.

Imported once, under the probe's own environment, and shared by every request: Python, Django
and the `evalserver` package (the Celery app), none of which reads a setting at import. A test
that needs a whole process (apps set up, `manage.py check`, which modules end up loaded) still
starts its own.

Protocol: one JSON line per request on stdin, {"env": {...}, "read": "<expression over s>"}; one
JSON line per reply, {"failed": ..., "values": ..., "output": ...}, on the original stdout.
"""

from __future__ import annotations

import io
import json
import os
import select
import subprocess
import sys
import traceback
from collections.abc import Mapping
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from types import TracebackType
from typing import Any

# a request that gets no answer in this long fails its test (an import hangs)
REPLY_TIMEOUT_S = 60


@dataclass(frozen=True)
class Evaluation:
    """The settings imported under one environment."""

    failed: bool
    # the value of the request's `read` expression (through JSON); None when the import failed
    values: Any
    # what importing printed (warnings), then, when it failed, the traceback: what a process's
    # stderr would hold
    output: str


class SettingsProbe:
    """The probe process, started by the tests (`with SettingsProbe() as probe:`)."""

    def __init__(self) -> None:
        # imported here: the probe process imports this module too, and needs none of the
        # test helpers (numpy, pytest)
        from tests.helpers import PROJECT_ROOT

        # the probe's own environment reaches no request (each replaces os.environ whole);
        # without DJANGO_SETTINGS_MODULE nothing can configure settings before the first one
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.evalserver.settings_probe"], cwd=PROJECT_ROOT,
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def evaluate(self, env: Mapping[str, str], read: str) -> Evaluation:
        """Import the settings under exactly `env` and evaluate `read` with `s` the settings."""
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps({"env": dict(env), "read": read}) + "\n")
        stdin.flush()
        ready, _, _ = select.select([stdout], [], [], REPLY_TIMEOUT_S)
        line = stdout.readline() if ready else ""
        if not line:
            raise RuntimeError(f"the settings probe gave no answer in {REPLY_TIMEOUT_S} s "
                               f"(exit status {self._process.poll()}; its stderr is above)")
        return Evaluation(**json.loads(line))

    def __enter__(self) -> SettingsProbe:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()  # the probe ends at the end of its input
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def _evaluate(env: dict[str, str], read: str) -> dict[str, Any]:
    import django.conf

    os.environ.clear()
    os.environ.update(env)
    for name in [name for name in sys.modules if name.startswith("evalserver.settings")]:
        del sys.modules[name]
    output = io.StringIO()
    try:
        with redirect_stdout(output), redirect_stderr(output):
            settings = django.conf.Settings(os.environ["DJANGO_SETTINGS_MODULE"])
            # `read`: the test's own expression over the settings, as its `python -c` program was
            values = json.loads(json.dumps(eval(read, {"s": settings})))
    except BaseException:  # whatever stops the import is that environment's failure
        return {"failed": True, "values": None,
                "output": output.getvalue() + traceback.format_exc()}
    return {"failed": False, "values": values, "output": output.getvalue()}


def _serve() -> None:
    import evalserver  # noqa: F401 - shared by every request (see the docstring)

    # replies go to a copy of stdout; anything else written to file descriptor 1 goes to stderr
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    for line in sys.stdin:
        request = json.loads(line)
        replies.write(json.dumps(_evaluate(request["env"], request["read"])) + "\n")
        replies.flush()


if __name__ == "__main__":
    _serve()
