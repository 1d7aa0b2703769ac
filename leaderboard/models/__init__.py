"""The leaderboard's tables: the catalog, submissions and scores, the review queue.

Writes go through `leaderboard.services`, reads through `leaderboard.selectors`.
"""

from leaderboard.models.audits import Audit
from leaderboard.models.catalog import (
    Benchmark,
    ImageSet,
    ImmutableVersionError,
    LabelSet,
    LabelSetVersion,
    LabelSetVersionQuerySet,
    content_hash_validator,
    slug_validator,
)
from leaderboard.models.ground_truth import (
    GroundTruthAnswer,
    GroundTruthCandidate,
    GroundTruthVote,
)
from leaderboard.models.review import (
    MistakeCategory,
    ReviewItem,
    ReviewItemSubmission,
    ReviewVote,
    Severity,
    Verdict,
    VersionRescore,
)
from leaderboard.models.submissions import (
    CheckpointFile,
    HitVector,
    Score,
    Submission,
    SubmissionFile,
)

__all__ = [
    "Audit",
    "Benchmark",
    "CheckpointFile",
    "GroundTruthAnswer",
    "GroundTruthCandidate",
    "GroundTruthVote",
    "HitVector",
    "ImageSet",
    "ImmutableVersionError",
    "LabelSet",
    "LabelSetVersion",
    "LabelSetVersionQuerySet",
    "MistakeCategory",
    "ReviewItem",
    "ReviewItemSubmission",
    "ReviewVote",
    "Score",
    "Severity",
    "Submission",
    "SubmissionFile",
    "Verdict",
    "VersionRescore",
    "content_hash_validator",
    "slug_validator",
]
