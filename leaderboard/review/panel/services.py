"""The one panel pipeline of both reviews: a panel votes on an item, the vote that fills the
panel decides it, the decision makes a new immutable label-set version, and every submission
is re-scored on that version (docs/metrics.md §11, §12, §14).

Novel-prediction review (`review.services.review_vote_cast`: is class c right at example i?) and
ground-truth review (`ground_truth.services.ground_truth_vote_cast`: given, guessed, both or
neither?) differ only in the question they ask (their vote's fields and its checks), the size
of their panel, and how a decision revises the labels (`workers.scoring.revisions`). Those are
the arguments here; the voting, the locking and the publishing of versions are written once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, models, transaction

from leaderboard import queue
from leaderboard.catalog.label_set_version_files import compiled_for_version, compiled_store
from leaderboard.catalog.models import Benchmark, LabelSet, LabelSetVersion
from leaderboard.catalog.selectors import label_set_version_latest
from leaderboard.catalog.services import label_set_row_lock, label_set_version_create
from leaderboard.catalog.teams.permissions import (
    benchmark_user_can_review,
    benchmark_user_can_see,
)
from leaderboard.common.errors import ServiceError
from leaderboard.jobs.lifecycle import job_request_fields
from leaderboard.review.models import VersionRescore
from workers.scoring.label_set_builders import CompiledLabelSet


class ReviewError(ServiceError):
    """A vote or review decision the server refuses."""


@dataclass(frozen=True)
class Panel:
    """One kind of review: its item and vote models and its panel."""

    item_model: type[models.Model]  # with `status` (OPEN while undecided), `label_set`, `votes`
    vote_model: type[models.Model]  # one row per (item, reviewer): a unique constraint
    item_field: str  # the vote's foreign key to its item
    name: str  # "review item", "ground-truth candidate": for messages
    short: str  # "item", "candidate": the same, once named
    panel_size: Callable[[Benchmark], int]
    # Decides a full panel's item (inside the vote's transaction, the item row locked).
    decide: Callable[[Any, User], None]


def panel_vote_cast(panel: Panel, *, item_id: int, reviewer: User,
                    vote: Mapping[str, Any]) -> Any:
    """Record one reviewer's vote (`vote`: the vote model's own fields, already checked by
    the question); the vote that fills the panel decides the item, once.

    The item's row lock makes concurrent votes queue up: none is lost, and only the vote that
    fills the panel decides. Only the reviewers of the item's benchmark's team vote
    (docs/hosts/teams.md): 403 `permission_denied`, or 404 when the benchmark is hidden from
    the voter."""
    model: Any = panel.item_model
    with transaction.atomic():
        try:
            # of=self: the item's row only, not the label set's and benchmark's it joins
            # (PostgreSQL locks every joined row otherwise; scorings update the benchmark's)
            item = (model.objects.select_for_update(of=("self",))
                    .select_related("label_set__benchmark").get(id=item_id))
        except model.DoesNotExist:
            raise ReviewError("not_found", f"no {panel.name} {item_id}",
                              http_status=404) from None
        benchmark = item.label_set.benchmark
        if not benchmark_user_can_see(user=reviewer, benchmark=benchmark):
            raise ReviewError("not_found", f"no {panel.name} {item_id}", http_status=404)
        if not benchmark_user_can_review(user=reviewer, benchmark=benchmark):
            raise ReviewError("permission_denied", f"only the reviewers of {benchmark.slug}'s "
                              "host team may review it", http_status=403)
        if item.status != model.Status.OPEN:
            raise ReviewError("already_decided", f"this {panel.short} is already decided",
                              http_status=409)
        try:
            with transaction.atomic():
                panel.vote_model.objects.create(  # type: ignore[attr-defined]
                    **{panel.item_field: item}, reviewer=reviewer, **vote)
        except IntegrityError:
            raise ReviewError("already_voted", f"you have already voted on this {panel.short}",
                              http_status=409) from None
        if item.votes.count() >= panel.panel_size(item.label_set.benchmark):
            panel.decide(item, reviewer)
    return item


def label_set_revision_publish(
    *, label_set: LabelSet, author: User | None, note: str,
    revise: Callable[[CompiledLabelSet], tuple[CompiledLabelSet, list[dict[str, Any]]]],
    skip_unchanged: bool = False,
) -> LabelSetVersion:
    """A new version = the current one revised by `revise` (which returns the revised labels
    and the summary's `settled` entries), stored by content before its row exists, and
    re-scored after commit. With `skip_unchanged`, labels identical to the current version's
    make no version: the current one is returned (an import run twice adds nothing)."""
    with transaction.atomic():
        # The label set's row lock: concurrent decisions build on each other, in turn.
        label_set_row_lock(label_set_id=label_set.pk)
        parent = label_set_version_latest(label_set=label_set)
        if parent is None:
            raise ReviewError("no_version", f"{label_set} has no version to revise")
        compiled, settled = revise(compiled_for_version(parent))
        if skip_unchanged and compiled.content_hash == parent.content_hash:
            return parent
        compiled_store(compiled)
        version = label_set_version_create(
            label_set=label_set, content_hash=compiled.content_hash, parent=parent,
            author=author, note=note, summary={**compiled.summary, "settled": settled},
            published=False)  # current once re-scored: boards keep the parent's figures till then
        version_rescore_request(version_id=version.pk)
    return version


def version_rescore_request(*, version_id: int) -> None:
    """Every scored submission must be (re-)scored on this version: a job recorded in the
    caller's transaction, sent after it commits, and sent again by the sweep if it is lost.
    Asked for while it runs, it is queued anew: the running task may no longer finish it,
    and the new one re-scores with what changed meanwhile."""
    VersionRescore.objects.update_or_create(version_id=version_id,
                                            defaults=job_request_fields())
    queue.job_queue(kind="rescore", job_id=version_id)
