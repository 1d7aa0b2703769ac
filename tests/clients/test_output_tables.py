"""What `leaderboard`, `benchmarks` and `benchmark` print, for a known board and known
benchmarks in the API's shapes (docs/api.md §5.1, §5.2): the submitter, the sort column's 95%
interval, rank (UB) and the shifts of the board; the benchmarks in 100 columns."""

from __future__ import annotations

from typing import Any

from evalserver_client.output import (
    benchmark_detail,
    benchmarks_table,
    leaderboard_heading,
    leaderboard_table,
)


def _cell(accuracy: float, low: float | None = None, high: float | None = None) -> dict[str, Any]:
    return {"accuracy": accuracy, "ci_low": low, "ci_high": high, "correct": None, "total": 1}


BOARD: dict[str, Any] = {
    "benchmark": "cifar10", "sort": "corrected", "count": 3, "page": 1, "page_size": 1000,
    "next": None, "previous": None,
    "columns": [{"slug": slug, "shift_from": "original"}
                for slug in ("original", "corrected", "cifar10.1-v6")],
    "rows": [
        {"submission_id": 7, "model_name": "wrn_28_10", "owner": "alice",
         "scores": {"original": _cell(0.9593, 0.9552, 0.9631),
                    "corrected": _cell(0.9606, 0.95649, 0.96434),
                    "cifar10.1-v6": _cell(0.9015, 0.8876, 0.9141)},
         "ranks": {"original": 1, "corrected": 1, "cifar10.1-v6": 1},
         "rank_shift": {"original": 0, "corrected": 0, "cifar10.1-v6": 0},
         "rank_ub": 1, "mcnemar_p": None},
        {"submission_id": 12, "model_name": "resnet_basic_110", "owner": "bob",
         "scores": {"original": _cell(0.9346, 0.9296, 0.9394),
                    "corrected": _cell(0.9404, 0.9356, 0.945)},
         "ranks": {"original": 3, "corrected": 2},
         "rank_shift": {"original": 0, "corrected": 1},
         "rank_ub": 2, "mcnemar_p": 0.0001},
        {"submission_id": 9, "model_name": "vgg16_keras", "owner": "carol",
         "scores": {"original": _cell(0.9359, 0.9309, 0.9406),
                    "corrected": _cell(0.9366, None, None),  # a released figure: no interval
                    "cifar10.1-v6": _cell(0.856, 0.8399, 0.8711)},
         "ranks": {"original": 2, "corrected": 3, "cifar10.1-v6": 2},
         "rank_shift": {"original": 0, "corrected": -1, "cifar10.1-v6": 0},
         "rank_ub": None, "mcnemar_p": None},  # not computed yet
    ],
}


def test_it_prints_a_known_board_with_submitters_intervals_and_rank_ub() -> None:
    assert leaderboard_heading(BOARD).splitlines() + leaderboard_table(BOARD).splitlines() == [
        "cifar10 leaderboard sorted by corrected (95% intervals); (+n) = places gained "
        "against original",
        "rank (UB) = 1 + the rows significantly better on corrected (McNemar, p < 0.05; - until "
        "computed)",
        "rank  rank (UB)  model             submitter  id  original                   corrected"
        "  cifar10.1-v6",
        "1     1          wrn_28_10         alice       7    95.93%       96.06% [95.65, 96.43]"
        "        90.15%",
        "2     2          resnet_basic_110  bob        12    93.46%  94.04% (+1) [93.56, 94.50]"
        "             -",
        "3     -          vgg16_keras       carol       9    93.59%                 93.66% (-1)"
        "        85.60%",
    ]


BENCHMARKS: list[dict[str, Any]] = [
    {"slug": "cifar10", "name": "CIFAR-10", "num_classes": 10, "main_image_set": "cifar10-test",
     "image_sets": [{"slug": "cifar10-test", "size": 10000},
                    {"slug": "cifar10.1-v4", "size": 2021}, {"slug": "cifar10.1-v6", "size": 2000}],
     "label_sets": [
         {"slug": "cifar10.1-v6", "image_set": "cifar10.1-v6", "kind": "single", "version": 1,
          "version_hash": "333b0aa1d6e6" + "0" * 52},
         {"slug": "cifar10h", "image_set": "cifar10-test", "kind": "soft", "version": 2,
          "version_hash": "2b8aa81a754c" + "1" * 52},
         {"slug": "hidden", "image_set": "cifar10-test", "kind": "single", "version": 1,
          "version_hash": None},
         {"slug": "original", "image_set": "cifar10-test", "kind": "single", "version": None,
          "version_hash": None}]},
    {"slug": "imagenet", "name": "ImageNet (ILSVRC-2012)", "num_classes": 1000,
     "main_image_set": "imagenet-val", "image_sets": [{"slug": "imagenet-val", "size": 50000}],
     "label_sets": []},
]


def test_it_lists_benchmarks_in_100_columns_and_details_one() -> None:
    listed = benchmarks_table(BENCHMARKS).splitlines()

    assert listed == [
        "benchmark  name                    main example set (examples)  classes  example sets"
        "  label sets",
        "cifar10    CIFAR-10                cifar10-test (10000)              10             3"
        "           4",
        "imagenet   ImageNet (ILSVRC-2012)  imagenet-val (50000)            1000             1"
        "           0",
    ]
    assert max(map(len, listed)) <= 100
    assert benchmark_detail(BENCHMARKS[0]).splitlines() == [
        "cifar10: CIFAR-10, 10 classes",
        "",
        "example set   in a submission  examples",
        "cifar10-test  required            10000",
        "cifar10.1-v4  optional             2021",
        "cifar10.1-v6  optional             2000",
        "",
        "label set     example set   kind    version  hash",
        "cifar10.1-v6  cifar10.1-v6  single  v1       333b0aa1d6e6",
        "cifar10h      cifar10-test  soft    v2       2b8aa81a754c",
        "hidden        cifar10-test  single  v1       -",
        "original      cifar10-test  single  -        -",
    ]
