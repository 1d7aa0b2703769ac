"""Web pages (HTML)."""

from django.urls import path

from leaderboard import views

urlpatterns = [
    path("", views.home, name="home"),
]
