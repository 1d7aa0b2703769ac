"""LabelSetVersion: numbering, validation and immutability."""

from __future__ import annotations

import pytest
from django.db import IntegrityError

from leaderboard.catalog.models import ImmutableVersionError, LabelSet, LabelSetVersion
from leaderboard.catalog.services import label_set_version_create
from tests.helpers import builtin_label_set_sync

pytestmark = pytest.mark.django_db

HASH_A = "a" * 64
HASH_B = "b" * 64


@pytest.fixture
def label_set() -> LabelSet:
    return builtin_label_set_sync("cifar10", "corrected")


def test_it_numbers_versions_one_after_another(label_set: LabelSet) -> None:
    first = label_set_version_create(
        label_set=label_set, content_hash=HASH_A, summary={"included": 10_000}
    )
    second = label_set_version_create(
        label_set=label_set, content_hash=HASH_B, summary={}, parent=first, note="review 1"
    )

    assert (first.number, second.number) == (1, 2)
    assert second.parent == first
    assert list(label_set.versions.values_list("number", "content_hash")) == [
        (1, HASH_A), (2, HASH_B),
    ]


def test_it_refuses_to_save_an_existing_version(label_set: LabelSet) -> None:
    version = label_set_version_create(
        label_set=label_set, content_hash=HASH_A, summary={}
    )
    version.note = "edited"
    version.content_hash = HASH_B

    with pytest.raises(ImmutableVersionError, match="immutable"):
        version.save()

    stored = LabelSetVersion.objects.get(pk=version.pk)
    assert (stored.note, stored.content_hash) == ("", HASH_A)


def test_it_refuses_to_update_versions_through_a_queryset(label_set: LabelSet) -> None:
    label_set_version_create(label_set=label_set, content_hash=HASH_A, summary={})

    with pytest.raises(ImmutableVersionError):
        LabelSetVersion.objects.filter(label_set=label_set).update(content_hash=HASH_B)

    assert list(LabelSetVersion.objects.values_list("content_hash", flat=True)) == [HASH_A]


@pytest.mark.parametrize("bad_hash", ["", "A" * 64, "a" * 63, "g" * 64])
def test_it_rejects_a_malformed_content_hash(label_set: LabelSet, bad_hash: str) -> None:
    with pytest.raises(ValueError, match="content_hash"):
        label_set_version_create(label_set=label_set, content_hash=bad_hash, summary={})

    assert LabelSetVersion.objects.count() == 0


def test_it_rejects_a_parent_from_another_label_set(label_set: LabelSet) -> None:
    other = builtin_label_set_sync("cifar10", "original")
    foreign = label_set_version_create(label_set=other, content_hash=HASH_A, summary={})

    with pytest.raises(ValueError, match="another label set"):
        label_set_version_create(
            label_set=label_set, content_hash=HASH_B, summary={}, parent=foreign
        )


def test_it_keeps_version_numbers_unique_in_the_database(label_set: LabelSet) -> None:
    label_set_version_create(label_set=label_set, content_hash=HASH_A, summary={})

    with pytest.raises(IntegrityError):
        LabelSetVersion.objects.create(label_set=label_set, number=1, content_hash=HASH_B)
