"""URLs under /api/: every domain's API views (docs/api.md)."""

from django.urls import path
from drf_spectacular.views import SpectacularSwaggerView

from leaderboard.accounts import api as auth
from leaderboard.audits import api as audits
from leaderboard.catalog import api as catalog
from leaderboard.catalog.hosting import api as hosting
from leaderboard.catalog.phases import api as phases
from leaderboard.catalog.teams import api as teams
from leaderboard.common import slugs  # noqa: F401  (registers <catalog_slug:...>)
from leaderboard.common.schema import SchemaView
from leaderboard.notifications import api as notifications
from leaderboard.presentation.about.api import BenchmarkAboutView
from leaderboard.presentation.boards import api as boards
from leaderboard.presentation.compare import api as compare
from leaderboard.review import api as review
from leaderboard.review.ground_truth import api as ground_truth
from leaderboard.submissions import api as submissions
from leaderboard.submissions.control import api as control
from leaderboard.submissions.participation import api as participation

# Benchmark and label set slugs may contain dots (`cifar10.1-v6`), so not `<slug:...>`; and
# not `<str:...>` either: `<catalog_slug:...>` (leaderboard/common/slugs.py) matches only a
# slug, so any other value (a NUL byte, 300 characters) is the 404 of an unknown URL.
urlpatterns = [
    path("auth/token/", auth.TokenView.as_view(), name="api-auth-token"),
    path("me/", auth.MeView.as_view(), name="api-me"),
    path("bundles/", hosting.BundleUploadCreateView.as_view(), name="api-bundle-upload-list"),
    path("bundles/<int:upload_id>/", hosting.BundleUploadDetailView.as_view(),
         name="api-bundle-upload-detail"),
    path("host-requests/", teams.HostRequestListCreateView.as_view(),
         name="api-host-request-list"),
    path("host-requests/<int:request_id>/decision/", teams.HostRequestDecisionView.as_view(),
         name="api-host-request-decision"),
    path("teams/", teams.TeamListView.as_view(), name="api-team-list"),
    path("teams/<catalog_slug:slug>/", teams.TeamDetailView.as_view(), name="api-team-detail"),
    path("teams/<catalog_slug:slug>/members/<username:username>/",
         teams.TeamMemberView.as_view(), name="api-team-member"),
    path("audits/", audits.AuditListCreateView.as_view(), name="api-audit-list"),
    path("audits/<int:audit_id>/", audits.AuditDetailView.as_view(), name="api-audit-detail"),
    path("benchmarks/", catalog.BenchmarkListView.as_view(), name="api-benchmark-list"),
    path("benchmarks/<catalog_slug:slug>/", catalog.BenchmarkDetailView.as_view(),
         name="api-benchmark-detail"),
    path("benchmarks/<catalog_slug:slug>/leaderboard/", boards.LeaderboardView.as_view(),
         name="api-leaderboard"),
    path("benchmarks/<catalog_slug:slug>/hide/", hosting.BenchmarkHideView.as_view(),
         name="api-benchmark-hide"),
    path("benchmarks/<catalog_slug:slug>/unhide/", hosting.BenchmarkUnhideView.as_view(),
         name="api-benchmark-unhide"),
    path("benchmarks/<catalog_slug:slug>/about/", BenchmarkAboutView.as_view(),
         name="api-benchmark-about"),
    path("benchmarks/<catalog_slug:slug>/participation/rules/",
         participation.ParticipationRulesView.as_view(), name="api-participation-rules"),
    path("benchmarks/<catalog_slug:slug>/participation/requests/",
         participation.ParticipationRequestListCreateView.as_view(),
         name="api-participation-requests"),
    path("benchmarks/<catalog_slug:slug>/participation/requests/<int:request_id>/decision/",
         participation.ParticipationDecisionView.as_view(), name="api-participation-decision"),
    path("benchmarks/<catalog_slug:slug>/participation/terms/acceptance/",
         participation.TermsAcceptanceView.as_view(), name="api-participation-terms"),
    path("benchmarks/<catalog_slug:slug>/label-sets/<catalog_slug:label_set>/versions/",
         review.LabelSetVersionListView.as_view(), name="api-label-set-versions"),
    path("benchmarks/<catalog_slug:slug>/label-sets/<catalog_slug:label_set>/versions/"
         "<int:number>/", review.LabelSetVersionDetailView.as_view(),
         name="api-label-set-version"),
    path("benchmarks/<catalog_slug:slug>/label-sets/<catalog_slug:label_set>/reveal/",
         phases.HiddenPhaseRevealView.as_view(), name="api-hidden-reveal"),
    path("benchmarks/<catalog_slug:slug>/label-sets/<catalog_slug:label_set>/phases/",
         phases.HiddenPhaseOpenView.as_view(), name="api-hidden-phase-open"),
    path("review/<catalog_slug:slug>/ground-truth/",
         ground_truth.GroundTruthQueueView.as_view(), name="api-ground-truth-queue"),
    path("review/ground-truth/<int:candidate_id>/votes/",
         ground_truth.GroundTruthVoteCreateView.as_view(), name="api-ground-truth-votes"),
    path("review/<catalog_slug:slug>/queue/", review.ReviewQueueView.as_view(),
         name="api-review-queue"),
    path("review/items/<int:item_id>/", review.ReviewItemDetailView.as_view(),
         name="api-review-item"),
    path("review/items/<int:item_id>/votes/", review.ReviewVoteCreateView.as_view(),
         name="api-review-votes"),
    path("submissions/", submissions.SubmissionListCreateView.as_view(),
         name="api-submission-list"),
    path("submissions/<int:submission_id>/", submissions.SubmissionDetailView.as_view(),
         name="api-submission-detail"),
    path("notifications/preferences/", notifications.PreferencesView.as_view(),
         name="api-notification-preferences"),
    path("notifications/deliveries/", notifications.DeliveryListView.as_view(),
         name="api-notification-delivery-list"),
    path("notifications/webhooks/", notifications.WebhookListCreateView.as_view(),
         name="api-webhook-list"),
    path("notifications/webhooks/<int:webhook_id>/", notifications.WebhookDeleteView.as_view(),
         name="api-webhook-detail"),
    path("notifications/webhooks/test/", notifications.WebhookTestView.as_view(),
         name="api-webhook-test"),
    path("submissions/<int:submission_id>/compare/<int:other_id>/",
         compare.ComparisonView.as_view(), name="api-submission-compare"),
    path("submissions/<int:submission_id>/withdraw/", control.SubmissionWithdrawView.as_view(),
         name="api-submission-withdraw"),
    path("submissions/<int:submission_id>/cancel/", control.SubmissionCancelView.as_view(),
         name="api-submission-cancel"),
    path("submissions/<int:submission_id>/rerun/", control.SubmissionRerunView.as_view(),
         name="api-submission-rerun"),
    path("schema/", SchemaView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
