"""Every model of the app, gathered for Django (one app label, `leaderboard`, keeps the
migrations in one place). Each domain defines its own in `leaderboard/<domain>/models.py`;
code imports them from there, not from here."""

from leaderboard.audits.models import Audit
from leaderboard.catalog.models import (
    Benchmark,
    BundleUpload,
    ExampleSet,
    ExampleSetNames,
    HiddenPhase,
    ImmutableVersionError,
    LabelSet,
    LabelSetVersion,
    LabelSetVersionQuerySet,
    content_hash_validator,
    slug_validator,
)
from leaderboard.catalog.teams.models import HostRequest, HostTeam, HostTeamMembership
from leaderboard.notifications.models import (
    DeliveryAttempt,
    NotificationDelivery,
    NotificationPreference,
    WebhookEndpoint,
)
from leaderboard.review.ground_truth.models import (
    GroundTruthAnswer,
    GroundTruthCandidate,
    GroundTruthVote,
)
from leaderboard.review.models import (
    MistakeCategory,
    PanelMistake,
    ReviewItem,
    ReviewItemSubmission,
    ReviewVote,
    Severity,
    Verdict,
    VersionRescore,
)
from leaderboard.submissions.models import (
    BoardSignificance,
    CheckpointFile,
    HitVector,
    Score,
    Submission,
    SubmissionFile,
)
from leaderboard.submissions.participation.models import (
    ParticipationRequest,
    ParticipationRules,
    TermsAcceptance,
)
from leaderboard.submissions.releases.models import Release

__all__ = [
    "Audit",
    "Benchmark",
    "BundleUpload",
    "BoardSignificance",
    "CheckpointFile",
    "DeliveryAttempt",
    "GroundTruthAnswer",
    "GroundTruthCandidate",
    "GroundTruthVote",
    "HostRequest",
    "HostTeam",
    "HostTeamMembership",
    "HiddenPhase",
    "HitVector",
    "ExampleSet",
    "ExampleSetNames",
    "ImmutableVersionError",
    "LabelSet",
    "LabelSetVersion",
    "LabelSetVersionQuerySet",
    "MistakeCategory",
    "NotificationDelivery",
    "NotificationPreference",
    "PanelMistake",
    "ParticipationRequest",
    "ParticipationRules",
    "Release",
    "ReviewItem",
    "ReviewItemSubmission",
    "ReviewVote",
    "Score",
    "Severity",
    "Submission",
    "SubmissionFile",
    "TermsAcceptance",
    "Verdict",
    "VersionRescore",
    "WebhookEndpoint",
    "content_hash_validator",
    "slug_validator",
]
