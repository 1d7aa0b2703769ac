"""The settings of accounts: django-allauth's sign-up, log-in, email verification, password
reset, social sign-in and two-factor authentication (leaderboard/accounts/adapters.py). Part of
the settings package (evalserver/settings/__init__.py): import `django.conf.settings`, never
this module.

docs/operators/settings.md lists the variables; docs/participants/account.md describes what a
visitor sees.
"""

from __future__ import annotations

from typing import Any

from evalserver.settings.core import SECURE_SSL_REDIRECT
from evalserver.settings.environment import DEBUG, env

AUTHENTICATION_BACKENDS = [
    # a username and password (the admin's login, the API's token endpoint)
    "django.contrib.auth.backends.ModelBackend",
    # allauth's: a username or an email address and password, and social accounts
    "allauth.account.auth_backends.AuthenticationBackend",
    # object permissions (`rules`, leaderboard/catalog/teams/permissions.py): user.has_perm(perm,
    # benchmark) answers alike for the pages, the API and the admin
    "rules.permissions.ObjectPermissionBackend",
]

# -- email verification: secure by default (a server with DEBUG=false asks every new address
# to be verified before its owner can log in) ------------------------------------------------
EVALSERVER_EMAIL_VERIFICATION: str = env.get_choice(
    "EVALSERVER_EMAIL_VERIFICATION", "optional" if DEBUG else "mandatory",
    choices=("mandatory", "optional", "none"))

# -- who may sign up: open (anyone), domains (addresses at EVALSERVER_SIGNUP_ALLOWED_DOMAINS
# only), invitation (with an unused code from `manage.py invite` or the admin), closed -------
EVALSERVER_SIGNUP_MODE: str = env.get_choice(
    "EVALSERVER_SIGNUP_MODE", "open", choices=("open", "domains", "invitation", "closed"))
# read by hand, not with get_list: an empty value is allowed (and is the default)
EVALSERVER_SIGNUP_ALLOWED_DOMAINS: list[str] = sorted({
    domain.strip().lower().lstrip("@")
    for domain in (env.raw("EVALSERVER_SIGNUP_ALLOWED_DOMAINS") or "").split(",")
    if domain.strip()})
if EVALSERVER_SIGNUP_MODE == "domains" and not EVALSERVER_SIGNUP_ALLOWED_DOMAINS:
    env.errors.append("EVALSERVER_SIGNUP_MODE=domains needs EVALSERVER_SIGNUP_ALLOWED_DOMAINS "
                      "(comma-separated domains, e.g. example.org,lab.example.org)")
for _domain in EVALSERVER_SIGNUP_ALLOWED_DOMAINS:
    if "." not in _domain or "@" in _domain or " " in _domain:
        env.errors.append(f"EVALSERVER_SIGNUP_ALLOWED_DOMAINS: {_domain!r} is not a domain "
                          "name (expected e.g. example.org)")

# -- two-factor authentication ---------------------------------------------------------------
# true: a user holding a maintainer role must activate a TOTP authenticator before anything
# else (leaderboard/accounts/middleware.py)
EVALSERVER_MFA_REQUIRED: bool = env.get_bool("EVALSERVER_MFA_REQUIRED", False)

# -- social sign-in: a provider is offered only when both its client id and secret are set ----
EVALSERVER_GITHUB_CLIENT_ID: str = env.get_str("EVALSERVER_GITHUB_CLIENT_ID", "")
EVALSERVER_GITHUB_CLIENT_SECRET: str = env.get_str("EVALSERVER_GITHUB_CLIENT_SECRET", "")
EVALSERVER_ORCID_CLIENT_ID: str = env.get_str("EVALSERVER_ORCID_CLIENT_ID", "")
EVALSERVER_ORCID_CLIENT_SECRET: str = env.get_str("EVALSERVER_ORCID_CLIENT_SECRET", "")
EVALSERVER_GOOGLE_CLIENT_ID: str = env.get_str("EVALSERVER_GOOGLE_CLIENT_ID", "")
EVALSERVER_GOOGLE_CLIENT_SECRET: str = env.get_str("EVALSERVER_GOOGLE_CLIENT_SECRET", "")


def _provider(name: str, client_id: str, secret: str, **extra: Any) -> dict[str, Any]:
    if bool(client_id) != bool(secret):
        env.errors.append(f"EVALSERVER_{name.upper()}_CLIENT_ID and "
                          f"EVALSERVER_{name.upper()}_CLIENT_SECRET must be set together")
    apps = [{"client_id": client_id, "secret": secret, "key": ""}] if client_id and secret else []
    return {"APPS": apps, **extra}


# from settings, never from SocialApp rows in the database
SOCIALACCOUNT_PROVIDERS: dict[str, dict[str, Any]] = {
    "github": _provider("github", EVALSERVER_GITHUB_CLIENT_ID, EVALSERVER_GITHUB_CLIENT_SECRET,
                        SCOPE=["user:email"]),
    "orcid": _provider("orcid", EVALSERVER_ORCID_CLIENT_ID, EVALSERVER_ORCID_CLIENT_SECRET),
    "google": _provider("google", EVALSERVER_GOOGLE_CLIENT_ID, EVALSERVER_GOOGLE_CLIENT_SECRET,
                        SCOPE=["profile", "email"], AUTH_PARAMS={"access_type": "online"}),
}

# -- allauth (https://docs.allauth.org/en/latest/account/configuration.html) -------------------
ACCOUNT_ADAPTER = "leaderboard.accounts.adapters.AccountAdapter"
SOCIALACCOUNT_ADAPTER = "leaderboard.accounts.adapters.SocialAccountAdapter"
ACCOUNT_FORMS = {"login": "leaderboard.accounts.forms.AccountLoginForm",
                 "signup": "leaderboard.accounts.forms.AccountSignupForm"}
SOCIALACCOUNT_FORMS = {"signup": "leaderboard.accounts.forms.SocialSignupForm"}
# a username (shown on the boards) and an email address, both required and unique
ACCOUNT_LOGIN_METHODS = {"username", "email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "username*", "password1*", "password2*"]
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_EMAIL_VERIFICATION = EVALSERVER_EMAIL_VERIFICATION
ACCOUNT_CONFIRM_EMAIL_ON_GET = False
ACCOUNT_LOGOUT_ON_PASSWORD_CHANGE = False
ACCOUNT_EMAIL_SUBJECT_PREFIX = "[evalserver] "
# the links in emails: https wherever the site is (SECURE_SSL_REDIRECT), else those of the
# request (scripts/serve.sh's plain http on 127.0.0.1)
ACCOUNT_DEFAULT_HTTP_PROTOCOL = "https" if SECURE_SSL_REDIRECT else "http"
# allauth's own rate limits stay on (password reset, sign-up, email confirmation), but for the
# failed logins: those are counted by the project's lockout, shared by every web process
# (leaderboard/accounts/login_throttle.py)
ACCOUNT_RATE_LIMITS = {"login_failed": False}
# in invitation mode a social sign-up shows the sign-up form (for the invitation code)
SOCIALACCOUNT_AUTO_SIGNUP = EVALSERVER_SIGNUP_MODE != "invitation"
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False
SOCIALACCOUNT_QUERY_EMAIL = True
SOCIALACCOUNT_LOGIN_ON_GET = False
MFA_SUPPORTED_TYPES = ["totp", "recovery_codes"]
MFA_TOTP_ISSUER = "evalserver"
