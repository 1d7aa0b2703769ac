from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("api/", include("leaderboard.api_urls")),
    path("admin/", admin.site.urls),
    path("", include("leaderboard.urls")),
]
