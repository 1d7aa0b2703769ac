from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("api/", include("leaderboard.api_urls")),
    path("admin/", admin.site.urls),
    path("", include("leaderboard.urls")),
]

# Errors raised outside the views (no URL matches, too many form fields, a database outage):
# JSON in the error shape under /api/, Django's pages elsewhere.
handler400 = "leaderboard.common.error_pages.bad_request"
handler403 = "leaderboard.common.error_pages.permission_denied"
handler404 = "leaderboard.common.error_pages.page_not_found"
handler500 = "leaderboard.common.error_pages.server_error"
