"""With DEBUG=false the settings are secure by default (`manage.py check --deploy` passes with
only DEBUG, SECRET_KEY and ALLOWED_HOSTS set); each https setting has its own off-switch."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import PROJECT_ROOT

# The https settings and the `check --deploy` warning each one silences when it is on
# (django/core/checks/security/base.py).
SWITCHES = {
    "SECURE_SSL_REDIRECT": "security.W008",
    "SECURE_HSTS_SECONDS": "security.W004",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "security.W005",
    "SECURE_HSTS_PRELOAD": "security.W021",
    "SESSION_COOKIE_SECURE": "security.W012",
    "CSRF_COOKIE_SECURE": "security.W016",
}
PRINT_HTTPS_SETTINGS = """
import json, django
django.setup()
from django.conf import settings as s
names = ("SECURE_SSL_REDIRECT SECURE_HSTS_SECONDS SECURE_HSTS_INCLUDE_SUBDOMAINS "
         "SECURE_HSTS_PRELOAD SESSION_COOKIE_SECURE CSRF_COOKIE_SECURE "
         "SECURE_PROXY_SSL_HEADER").split()
print(json.dumps({name: getattr(s, name) for name in names}))
"""


def _clean_env(home: Path, **variables: str) -> dict[str, str]:
    """Nothing of this process's environment but PATH: only the variables given."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "LANG": "C.UTF-8", "DJANGO_SETTINGS_MODULE": "evalserver.settings", **variables}


def _production(home: Path, **variables: str) -> dict[str, str]:
    return _clean_env(home, DEBUG="false", SECRET_KEY=secrets.token_urlsafe(50),
                      ALLOWED_HOSTS="evals.example.org", **variables)


def _check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120)


def _https_settings(env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", PRINT_HTTPS_SETTINGS], cwd=PROJECT_ROOT,
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@pytest.mark.slow
def test_it_passes_check_deploy_with_only_debug_secret_key_and_allowed_hosts(
        tmp_path: Path) -> None:
    done = _check_deploy(_production(tmp_path))

    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout


def test_it_is_secure_by_default_without_debug(tmp_path: Path) -> None:
    assert _https_settings(_production(tmp_path)) == {
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
    }


def test_it_turns_every_https_setting_off_under_debug(tmp_path: Path) -> None:
    assert _https_settings(_clean_env(tmp_path, DEBUG="true")) == {
        "SECURE_SSL_REDIRECT": False,
        "SECURE_HSTS_SECONDS": 0,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
        "SECURE_HSTS_PRELOAD": False,
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
        "SECURE_PROXY_SSL_HEADER": None,
    }


@pytest.mark.slow
@pytest.mark.parametrize(("name", "warning"), sorted(SWITCHES.items()))
def test_it_turns_each_https_setting_off_by_its_variable(
        tmp_path: Path, name: str, warning: str) -> None:
    off = "0" if name == "SECURE_HSTS_SECONDS" else "false"
    env = _production(tmp_path, **{name: off})

    values = _https_settings(env)
    done = _check_deploy(env)

    assert values[name] in (False, 0)
    assert {k: v for k, v in values.items() if k != name and k in SWITCHES} == {
        k: (31_536_000 if k == "SECURE_HSTS_SECONDS" else True)
        for k in SWITCHES if k != name}
    # the one switch turned off is the one warning of `check --deploy`
    assert done.returncode == 1
    assert f"({warning})" in done.stderr
    assert done.stderr.count("(security.W") == 1, done.stderr


def test_it_stops_trusting_x_forwarded_proto_when_told(tmp_path: Path) -> None:
    values = _https_settings(_production(tmp_path, SECURE_PROXY_SSL_HEADER="off"))

    assert values["SECURE_PROXY_SSL_HEADER"] is None
    assert values["SECURE_SSL_REDIRECT"] is True


def test_it_fails_loudly_on_a_bad_https_setting(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PRINT_HTTPS_SETTINGS], cwd=PROJECT_ROOT,
        env=_production(tmp_path, SECURE_SSL_REDIRECT="maybe", SECURE_HSTS_SECONDS="-1"),
        capture_output=True, text=True, timeout=60)

    assert done.returncode != 0
    assert "SECURE_SSL_REDIRECT='maybe' is not valid: expected one of" in done.stderr
    assert "SECURE_HSTS_SECONDS='-1' is not valid: expected an integer >= 0" in done.stderr
