"""The accounts' settings (evalserver/settings/accounts.py) from the environment: secure
defaults without DEBUG, every bad value a loud failure at start."""

from __future__ import annotations

import os

from tests.evalserver.settings_probe import Evaluation, SettingsProbe
from tests.settings_fixtures import SETTINGS_VARIABLES

ACCOUNT_VARIABLES = (
    "EVALSERVER_EMAIL_VERIFICATION", "EVALSERVER_SIGNUP_MODE",
    "EVALSERVER_SIGNUP_ALLOWED_DOMAINS", "EVALSERVER_MFA_REQUIRED", "SECURE_SSL_REDIRECT",
    *(f"EVALSERVER_{name}_CLIENT_{part}" for name in ("GITHUB", "ORCID", "GOOGLE")
      for part in ("ID", "SECRET")))
READ = """{
    "verification": s.ACCOUNT_EMAIL_VERIFICATION,
    "mode": s.EVALSERVER_SIGNUP_MODE,
    "domains": s.EVALSERVER_SIGNUP_ALLOWED_DOMAINS,
    "mfa": s.EVALSERVER_MFA_REQUIRED,
    "apps": {name: provider["APPS"] for name, provider in s.SOCIALACCOUNT_PROVIDERS.items()},
    "auto_signup": s.SOCIALACCOUNT_AUTO_SIGNUP,
    "protocol": s.ACCOUNT_DEFAULT_HTTP_PROTOCOL,
    "backends": s.AUTHENTICATION_BACKENDS,
}"""


def _run(probe: SettingsProbe, **variables: str) -> Evaluation:
    env = {k: v for k, v in os.environ.items()
           if k not in SETTINGS_VARIABLES and k not in ACCOUNT_VARIABLES}
    env.update(variables, DJANGO_SETTINGS_MODULE="evalserver.settings")
    return probe.evaluate(env, READ)


def test_it_defaults_to_mandatory_verification_open_sign_up_and_no_provider(
    settings_probe: SettingsProbe,
) -> None:
    production = _run(settings_probe, SECRET_KEY="x" * 50)
    assert not production.failed, production.output
    assert production.values == {
        "verification": "mandatory", "mode": "open", "domains": [], "mfa": False,
        "apps": {"github": [], "orcid": [], "google": []}, "auto_signup": True,
        "protocol": "https",
        "backends": ["django.contrib.auth.backends.ModelBackend",
                     "allauth.account.auth_backends.AuthenticationBackend",
                     "rules.permissions.ObjectPermissionBackend"]}
    development = _run(settings_probe, DEBUG="true")
    assert (development.values["verification"], development.values["protocol"]) == (
        "optional", "http")


def test_it_reads_the_accounts_settings(settings_probe: SettingsProbe) -> None:
    chosen = _run(settings_probe, SECRET_KEY="x" * 50, EVALSERVER_EMAIL_VERIFICATION="None",
                  EVALSERVER_SIGNUP_MODE="domains",
                  EVALSERVER_SIGNUP_ALLOWED_DOMAINS=" Example.org, @lab.example.net,,",
                  EVALSERVER_MFA_REQUIRED="yes", EVALSERVER_GITHUB_CLIENT_ID="gh-id",
                  EVALSERVER_GITHUB_CLIENT_SECRET="gh-secret")
    assert not chosen.failed, chosen.output
    values = chosen.values
    assert (values["verification"], values["mode"], values["domains"], values["mfa"]) == (
        "none", "domains", ["example.org", "lab.example.net"], True)
    assert values["apps"] == {"github": [{"client_id": "gh-id", "secret": "gh-secret",
                                          "key": ""}], "orcid": [], "google": []}
    invitation = _run(settings_probe, SECRET_KEY="x" * 50, EVALSERVER_SIGNUP_MODE="invitation")
    assert invitation.values["auto_signup"] is False  # the social form asks for the code


def test_it_fails_loudly_on_bad_accounts_settings(settings_probe: SettingsProbe) -> None:
    result = _run(settings_probe, SECRET_KEY="x" * 50, EVALSERVER_EMAIL_VERIFICATION="later",
                  EVALSERVER_SIGNUP_MODE="domains", EVALSERVER_MFA_REQUIRED="sometimes",
                  EVALSERVER_ORCID_CLIENT_ID="orcid-id")
    assert result.failed
    for line in ("EVALSERVER_EMAIL_VERIFICATION='later' is not valid: expected one of "
                 "mandatory, optional, none",
                 "EVALSERVER_SIGNUP_MODE=domains needs EVALSERVER_SIGNUP_ALLOWED_DOMAINS",
                 "EVALSERVER_MFA_REQUIRED='sometimes' is not valid",
                 "EVALSERVER_ORCID_CLIENT_ID and EVALSERVER_ORCID_CLIENT_SECRET must be set "
                 "together"):
        assert line in result.output, line
    bad_domain = _run(settings_probe, SECRET_KEY="x" * 50, EVALSERVER_SIGNUP_MODE="domains",
                      EVALSERVER_SIGNUP_ALLOWED_DOMAINS="example.org,localhost")
    assert bad_domain.failed
    assert ("EVALSERVER_SIGNUP_ALLOWED_DOMAINS: 'localhost' is not a domain name"
            in bad_domain.output)
    bad_mode = _run(settings_probe, SECRET_KEY="x" * 50, EVALSERVER_SIGNUP_MODE="friends")
    assert ("EVALSERVER_SIGNUP_MODE='friends' is not valid: expected one of open, domains, "
            "invitation, closed") in bad_mode.output
