"""Web pages (HTML). The JSON API lives under /api/ (leaderboard/api/urls.py)."""

from django.contrib.auth import views as auth_views
from django.urls import path, re_path

from leaderboard import views

urlpatterns = [
    path("", views.home, name="home"),
    path("signup/", views.signup, name="signup"),
    path("login/", auth_views.LoginView.as_view(template_name="leaderboard/login.html",
                                                redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("profile/", views.profile, name="profile"),
    path("profile/token/create/", views.token_create, name="token_create"),
    path("profile/token/revoke/", views.token_revoke, name="token_revoke"),
    path("submit/", views.submit, name="submit"),
    path("submissions/", views.submission_list, name="submission_list"),
    path("submissions/<int:submission_id>/", views.submission_detail, name="submission_detail"),
    path("submissions/<int:submission_id>/status.json", views.submission_status,
         name="submission_status"),
    path("submissions/<int:submission_id>/visibility/", views.submission_visibility,
         name="submission_visibility"),
    path("submissions/<int:submission_id>/mistakes/", views.submission_mistakes,
         name="submission_mistakes"),
    path("benchmarks/<str:slug>/", views.leaderboard, name="leaderboard"),
    path("benchmarks/<str:slug>/label-sets/<str:label_set>/history/", views.label_set_history,
         name="label_set_history"),
    path("benchmarks/<str:slug>/about/", views.benchmark_about, name="benchmark_about"),
    path("benchmarks/<str:slug>/plots/", views.plots, name="plots"),
    re_path(r"^benchmarks/(?P<slug>[^/]+)/plots/(?P<kind>new-test-set|label-set|ranks)/"
            r"(?P<label_set>[^/]+)\.(?P<fmt>svg|csv|json)$", views.plot_download,
            name="plot_download"),
    re_path(r"^benchmarks/(?P<slug>[^/]+)/plots/noise-prevalence\.(?P<fmt>svg|csv|json)$",
            views.noise_prevalence_download, name="noise_prevalence_download"),
    path("audits/", views.audit_list, name="audit_list"),
    path("audits/<int:audit_id>/", views.audit_detail, name="audit_detail"),
    path("audits/<int:audit_id>/status.json", views.audit_status, name="audit_status"),
    path("audits/<int:audit_id>/histogram.csv", views.audit_histogram_csv,
         name="audit_histogram_csv"),
    path("audits/<int:audit_id>/histogram.svg", views.audit_histogram_svg,
         name="audit_histogram_svg"),
    path("review/", views.review_home, name="review_home"),
    path("review/<str:slug>/next/", views.review_next, name="review_next"),
    path("review/<str:slug>/ground-truth/next/", views.ground_truth_next,
         name="ground_truth_next"),
]
