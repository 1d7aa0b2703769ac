from django.contrib import admin
from django.urls import include, path

from leaderboard.accounts.views import AccountLoginView, admin_login

urlpatterns = [
    path("api/", include("leaderboard.api_urls")),
    # before the admin's own: its login page answers 429 past the failed-login limits
    path("admin/login/", admin_login, name="admin_login"),
    path("admin/", admin.site.urls),
    # django-allauth's accounts: sign-up, log in, email, password, 2FA, social sign-in; its
    # login first, held to the failed-login limits (leaderboard/accounts/views.py)
    path("accounts/login/", AccountLoginView.as_view(), name="account_login"),
    path("accounts/", include("allauth.urls")),
    path("", include("leaderboard.urls")),
]

# Errors raised outside the views (no URL matches, too many form fields, a database outage):
# JSON in the error shape under /api/, Django's pages elsewhere.
handler400 = "leaderboard.common.error_pages.bad_request"
handler403 = "leaderboard.common.error_pages.permission_denied"
handler404 = "leaderboard.common.error_pages.page_not_found"
handler500 = "leaderboard.common.error_pages.server_error"
