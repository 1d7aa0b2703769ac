"""With DEBUG=false the settings are secure by default (`manage.py check --deploy` passes with
only DEBUG, SECRET_KEY and ALLOWED_HOSTS set); each https setting has its own off-switch."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.evalserver.settings_probe import SettingsProbe
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
# The https settings, read by the settings probe (tests/evalserver/settings_probe.py: the
# settings imported afresh under each test's environment, without setting up every app).
READ_HTTPS_SETTINGS = """{name: getattr(s, name) for name in (
    "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE",
    "SECURE_PROXY_SSL_HEADER")}"""


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


HttpsSettings = Callable[[dict[str, str]], dict[str, object]]


@pytest.fixture
def https_settings(settings_probe: SettingsProbe) -> HttpsSettings:
    """The https settings imported under exactly `env`, which must import."""
    def read(env: dict[str, str]) -> dict[str, object]:
        result = settings_probe.evaluate(env, READ_HTTPS_SETTINGS)
        assert not result.failed, result.output
        return dict(result.values)
    return read


@pytest.mark.slow
def test_it_passes_check_deploy_with_only_debug_secret_key_and_allowed_hosts(
        tmp_path: Path) -> None:
    done = _check_deploy(_production(tmp_path))

    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout


def test_it_is_secure_by_default_without_debug(
        tmp_path: Path, https_settings: HttpsSettings) -> None:
    assert https_settings(_production(tmp_path)) == {
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
    }


def test_it_turns_every_https_setting_off_under_debug(
        tmp_path: Path, https_settings: HttpsSettings) -> None:
    assert https_settings(_clean_env(tmp_path, DEBUG="true")) == {
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
        tmp_path: Path, https_settings: HttpsSettings,
        name: str, warning: str) -> None:
    off = "0" if name == "SECURE_HSTS_SECONDS" else "false"
    env = _production(tmp_path, **{name: off})

    values = https_settings(env)
    done = _check_deploy(env)

    assert values[name] in (False, 0)
    assert {k: v for k, v in values.items() if k != name and k in SWITCHES} == {
        k: (31_536_000 if k == "SECURE_HSTS_SECONDS" else True)
        for k in SWITCHES if k != name}
    # the one switch turned off is the one warning of `check --deploy`
    assert done.returncode == 1
    assert f"({warning})" in done.stderr
    assert done.stderr.count("(security.W") == 1, done.stderr


def test_it_stops_trusting_x_forwarded_proto_when_told(
        tmp_path: Path, https_settings: HttpsSettings) -> None:
    values = https_settings(_production(tmp_path, SECURE_PROXY_SSL_HEADER="off"))

    assert values["SECURE_PROXY_SSL_HEADER"] is None
    assert values["SECURE_SSL_REDIRECT"] is True


def test_it_fails_loudly_on_a_bad_https_setting(tmp_path: Path,
                                                settings_probe: SettingsProbe) -> None:
    result = settings_probe.evaluate(
        _production(tmp_path, SECURE_SSL_REDIRECT="maybe", SECURE_HSTS_SECONDS="-1"),
        READ_HTTPS_SETTINGS)

    assert result.failed
    assert "SECURE_SSL_REDIRECT='maybe' is not valid: expected one of" in result.output
    assert "SECURE_HSTS_SECONDS='-1' is not valid: expected an integer >= 0" in result.output
