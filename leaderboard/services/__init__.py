"""Writes. Every change to the leaderboard's tables goes through a function here.

Names are `<entity>_<action>`; arguments are keyword-only. `catalog` loads benchmarks and
label sets from the data directory; `submissions` creates and scores submissions.
"""

from leaderboard.services.catalog import (
    CatalogError,
    CatalogLoadReport,
    Change,
    benchmark_catalog_load,
    benchmark_sync,
    data_dir_missing_message,
    image_set_sync,
    label_set_sync,
    label_set_version_create,
)

__all__ = [
    "CatalogError",
    "CatalogLoadReport",
    "Change",
    "benchmark_catalog_load",
    "benchmark_sync",
    "data_dir_missing_message",
    "image_set_sync",
    "label_set_sync",
    "label_set_version_create",
]

from leaderboard.services.submissions import (  # noqa: E402
    SubmissionError,
    benchmark_leaderboard_touch,
    score_upsert,
    submission_claim,
    submission_create,
    submission_fail,
    submission_quota_left,
    submission_score,
    submission_visibility_set,
)

__all__ += [
    "SubmissionError",
    "benchmark_leaderboard_touch",
    "score_upsert",
    "submission_claim",
    "submission_create",
    "submission_fail",
    "submission_quota_left",
    "submission_score",
    "submission_visibility_set",
]

from leaderboard.services.demo import (  # noqa: E402
    DEMO_USERNAME,
    DemoModel,
    DemoSeedReport,
    demo_models,
    demo_seed,
    demo_submissions_wait,
    demo_user_get_or_create,
)

__all__ += [
    "DEMO_USERNAME",
    "DemoModel",
    "DemoSeedReport",
    "demo_models",
    "demo_seed",
    "demo_submissions_wait",
    "demo_user_get_or_create",
]

from leaderboard.services.sweeps import submissions_sweep  # noqa: E402

__all__ += ["submissions_sweep"]
