"""URLs under /api/ (SPEC "Names and the public API (v1)")."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from leaderboard.api import auth, benchmarks, submissions

# Benchmark slugs may contain dots (`cifar10.1-v6` is an image set; benchmarks follow the
# same rule), so `<str:slug>`, not `<slug:slug>`.
urlpatterns = [
    path("auth/token/", auth.TokenView.as_view(), name="api-auth-token"),
    path("benchmarks/", benchmarks.BenchmarkListView.as_view(), name="api-benchmark-list"),
    path("benchmarks/<str:slug>/", benchmarks.BenchmarkDetailView.as_view(),
         name="api-benchmark-detail"),
    path("benchmarks/<str:slug>/leaderboard/", benchmarks.LeaderboardView.as_view(),
         name="api-leaderboard"),
    path("submissions/", submissions.SubmissionListCreateView.as_view(),
         name="api-submission-list"),
    path("submissions/<int:submission_id>/", submissions.SubmissionDetailView.as_view(),
         name="api-submission-detail"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
