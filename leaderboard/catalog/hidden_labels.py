"""One hidden labelling, one release mechanism, across loads (docs/hosts/hidden-test-sets.md,
"One labelling, one mechanism"): the hidden label sets of a bundle are checked against each
other and against the hidden label sets its benchmark already has (a bundle added with
`update` may add label sets beside them), before anything is written. The comparison is the
scoring core's (workers/scoring/bundles/hidden_overlap.py).
"""

from __future__ import annotations

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import Benchmark, LabelSet
from leaderboard.catalog.selectors import label_set_version_latest
from workers.scoring.bundles import Bundle
from workers.scoring.bundles.hidden_overlap import HiddenRelease, hidden_labels_check
from workers.scoring.label_set_builders import CompiledLabelSet


def hidden_releases_check(*, bundle: Bundle, compiled: dict[str, CompiledLabelSet],
                          benchmark: Benchmark | None) -> None:
    """BundleError (`hidden_labels_shared`) when two hidden label sets of this benchmark,
    this bundle's (as compiled) or loaded ones it does not declare (their latest version),
    share their labels under different release mechanisms."""
    sets = []
    if benchmark is not None:
        declared = {ls.slug for ls in bundle.label_sets}
        loaded = (LabelSet.objects.filter(benchmark=benchmark, labels_hidden=True)
                  .exclude(slug__in=declared).select_related("benchmark", "example_set")
                  .order_by("id"))
        for label_set in loaded:
            version = label_set_version_latest(label_set=label_set)
            if version is not None:
                sets.append(HiddenRelease(label_set.slug, label_set.release,
                                          label_set.release_step, compiled_for_version(version),
                                          loaded=True))
    # the bundle's last: a refusal names the field of one of them
    sets += [HiddenRelease(ls.slug, ls.release, ls.step, compiled[ls.slug])
             for ls in bundle.label_sets if ls.hidden and ls.slug in compiled]
    if len(sets) > 1:
        hidden_labels_check(sets, file=bundle.manifest.name)
