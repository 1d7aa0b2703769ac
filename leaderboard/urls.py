"""Web pages (HTML). The JSON API lives under /api/ (leaderboard/api_urls.py)."""

from django.contrib.auth import views as auth_views
from django.urls import path, re_path

from leaderboard.accounts.client_wheels import WHEEL_NAME
from leaderboard.accounts.views import (
    LoginView,
    client_download,
    client_wheel,
    profile,
    signup,
    token_create,
    token_revoke,
)
from leaderboard.audits.views import (
    audit_detail,
    audit_histogram_csv,
    audit_histogram_svg,
    audit_list,
    audit_status,
)
from leaderboard.catalog.hosting.views import (
    bundle_upload_detail,
    bundle_upload_status,
    bundle_uploads,
)
from leaderboard.catalog.phases.views import hidden_phase_open, hidden_reveal
from leaderboard.catalog.teams.views import host_request_page, host_requests_page, team_page
from leaderboard.common.slugs import SLUG_PATTERN
from leaderboard.notifications.views import (
    notification_preferences_save,
    webhook_add,
    webhook_remove,
    webhook_test,
)
from leaderboard.presentation.about.views import benchmark_about
from leaderboard.presentation.boards.downloads import leaderboard_csv
from leaderboard.presentation.boards.views import leaderboard
from leaderboard.presentation.charts.views import noise_prevalence_download, plot_download, plots
from leaderboard.presentation.compare.views import submission_compare, submission_compare_pick
from leaderboard.presentation.gallery.views import submission_mistakes
from leaderboard.presentation.views import home
from leaderboard.review.ground_truth.views import ground_truth_next
from leaderboard.review.panel.views import review_example_image
from leaderboard.review.views import label_set_history, review_home, review_next
from leaderboard.submissions.control.views import (
    submission_cancel_page,
    submission_rerun_page,
    submission_withdraw_page,
)
from leaderboard.submissions.participation.views import participation, participation_hosts
from leaderboard.submissions.views import (
    submission_detail,
    submission_list,
    submission_status,
    submission_visibility,
    submit,
)

# Slugs are `<catalog_slug:...>` (leaderboard/common/slugs.py, imported above: it registers
# the converter), so a value that is not a slug is the 404 page and reaches no view.
urlpatterns = [
    path("", home, name="home"),
    path("signup/", signup, name="signup"),
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("profile/", profile, name="profile"),
    path("profile/token/create/", token_create, name="token_create"),
    path("profile/token/revoke/", token_revoke, name="token_revoke"),
    path("profile/notifications/", notification_preferences_save,
         name="notification_preferences_save"),
    path("profile/webhooks/add/", webhook_add, name="webhook_add"),
    path("profile/webhooks/test/", webhook_test, name="webhook_test"),
    path("profile/webhooks/<int:webhook_id>/remove/", webhook_remove, name="webhook_remove"),
    path("client/", client_download, name="client"),
    re_path(rf"^client/(?P<name>{WHEEL_NAME.pattern})\Z", client_wheel, name="client_wheel"),
    path("submit/", submit, name="submit"),
    path("submissions/", submission_list, name="submission_list"),
    path("submissions/compare/", submission_compare_pick, name="submission_compare_pick"),
    path("submissions/<int:submission_id>/", submission_detail, name="submission_detail"),
    path("submissions/<int:submission_id>/compare/<int:other_id>/", submission_compare,
         name="submission_compare"),
    path("submissions/<int:submission_id>/status.json", submission_status,
         name="submission_status"),
    path("submissions/<int:submission_id>/visibility/", submission_visibility,
         name="submission_visibility"),
    path("submissions/<int:submission_id>/withdraw/", submission_withdraw_page,
         name="submission_withdraw"),
    path("submissions/<int:submission_id>/cancel/", submission_cancel_page,
         name="submission_cancel"),
    path("submissions/<int:submission_id>/rerun/", submission_rerun_page,
         name="submission_rerun"),
    path("submissions/<int:submission_id>/mistakes/", submission_mistakes,
         name="submission_mistakes"),
    path("benchmarks/<catalog_slug:slug>/", leaderboard, name="leaderboard"),
    path("benchmarks/<catalog_slug:slug>/leaderboard.csv", leaderboard_csv,
         name="leaderboard_csv"),
    path("benchmarks/<catalog_slug:slug>/label-sets/<catalog_slug:label_set>/reveal/",
         hidden_reveal, name="hidden_reveal"),
    path("benchmarks/<catalog_slug:slug>/label-sets/<catalog_slug:label_set>/phases/",
         hidden_phase_open, name="hidden_phase_open"),
    path("benchmarks/<catalog_slug:slug>/label-sets/<catalog_slug:label_set>/history/",
         label_set_history, name="label_set_history"),
    path("benchmarks/<catalog_slug:slug>/about/", benchmark_about, name="benchmark_about"),
    path("benchmarks/<catalog_slug:slug>/participation/", participation, name="participation"),
    path("benchmarks/<catalog_slug:slug>/participation/hosts/", participation_hosts,
         name="participation_hosts"),
    path("benchmarks/<catalog_slug:slug>/plots/", plots, name="plots"),
    re_path(rf"^benchmarks/(?P<slug>{SLUG_PATTERN})/plots/"
            rf"(?P<kind>new-test-set|label-set|ranks)/(?P<label_set>{SLUG_PATTERN})"
            r"\.(?P<fmt>svg|csv|json)\Z", plot_download, name="plot_download"),
    re_path(rf"^benchmarks/(?P<slug>{SLUG_PATTERN})/plots/noise-prevalence"
            r"\.(?P<fmt>svg|csv|json)\Z", noise_prevalence_download,
            name="noise_prevalence_download"),
    path("audits/", audit_list, name="audit_list"),
    path("audits/<int:audit_id>/", audit_detail, name="audit_detail"),
    path("audits/<int:audit_id>/status.json", audit_status, name="audit_status"),
    path("audits/<int:audit_id>/histogram.csv", audit_histogram_csv,
         name="audit_histogram_csv"),
    path("audits/<int:audit_id>/histogram.svg", audit_histogram_svg,
         name="audit_histogram_svg"),
    path("bundles/", bundle_uploads, name="bundle_upload_list"),
    path("bundles/<int:upload_id>/", bundle_upload_detail, name="bundle_upload_detail"),
    path("bundles/<int:upload_id>/status.json", bundle_upload_status,
         name="bundle_upload_status"),
    path("host/", host_request_page, name="host_request"),
    path("host/requests/", host_requests_page, name="host_requests"),
    path("teams/<catalog_slug:slug>/", team_page, name="team"),
    path("review/", review_home, name="review_home"),
    path("review/<catalog_slug:slug>/next/", review_next, name="review_next"),
    path("review/<catalog_slug:slug>/ground-truth/next/", ground_truth_next,
         name="ground_truth_next"),
    path("review/<catalog_slug:slug>/examples/<catalog_slug:example_set>/<int:index>/image",
         review_example_image, name="review_example_image"),
]
