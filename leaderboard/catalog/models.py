"""Benchmarks, example sets, label sets and their immutable versions, and the bundles staff
upload to add benchmarks (`BundleUpload`, the job of leaderboard/catalog/hosting/).

Writes go through `leaderboard.catalog.services`, reads through `leaderboard.catalog.selectors`.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models

from leaderboard.catalog.teams.models import HostTeam, site_team_id
from leaderboard.common.slugs import SLUG_MAX_LENGTH
from leaderboard.jobs.lifecycle import ClaimedJob

# Public slugs (docs/metrics.md §15) may contain dots: `cifar10.1-v6`. Django's SlugField does not
# allow them, so slugs are CharFields with this validator.
slug_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9._-]*\Z",
    "Use lower-case letters, digits, '.', '_' and '-', starting with a letter or digit.",
)
content_hash_validator = RegexValidator(
    r"^[0-9a-f]{64}\Z", "A content hash is 64 lower-case hexadecimal characters (SHA-256)."
)


class Benchmark(models.Model):
    class Modality(models.TextChoices):
        IMAGE = "image", "Image"
        TEXT = "text", "Text"
        AUDIO = "audio", "Audio"

    slug = models.CharField(max_length=SLUG_MAX_LENGTH, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=200)
    num_classes = models.PositiveIntegerField(validators=[MinValueValidator(2)])
    # The slug of the example set a submission must always include.
    main_example_set = models.CharField(max_length=SLUG_MAX_LENGTH, validators=[slug_validator])
    created = models.DateTimeField(auto_now_add=True)
    # Bumped whenever a score or a public flag changes: part of the leaderboard cache key.
    leaderboard_generation = models.PositiveBigIntegerField(default=0, editable=False)
    # Reviewers who vote on one novel prediction before the majority decides it.
    review_panel_size = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(1)]
    )
    # Reviewers who answer on one ground-truth candidate (Northcutt et al. used 5 workers).
    ground_truth_panel_size = models.PositiveSmallIntegerField(
        default=5, validators=[MinValueValidator(1)]
    )
    # The loaded definition (docs/bundles.md §2), compiled from the benchmark's bundle. These
    # describe the benchmark and are not versioned: `load_benchmarks` and `benchmark_add
    # --update` rewrite them from the bundle.
    description = models.TextField(blank=True)
    modality = models.CharField(max_length=16, choices=Modality.choices, default=Modality.IMAGE)
    # The benchmark's own references, full text, in the manifest's order.
    citations = models.JSONField(default=list, blank=True)
    # The slug of the label set whose figure heads the benchmark (the leaderboard's default sort).
    headline = models.CharField(max_length=SLUG_MAX_LENGTH, blank=True)
    # What a checkpoint receives (docs/bundles.md §2.1; workers.inference.Preprocessing's
    # as_dict); {} when its bundle declares no inputs: it takes predictions only.
    inputs = models.JSONField(default=dict, blank=True)
    # An expert panel's confused class pairs, a file under the data directory that its bundle
    # names (docs/bundles.md §2: `class_confusions`); "" when it names none.
    class_confusions = models.CharField(max_length=500, blank=True)
    # Class names in id order; class_keys, where the classes have stable keys (ImageNet's
    # WordNet ids), in the same order.
    class_names = models.JSONField(default=list, blank=True)
    class_keys = models.JSONField(null=True, blank=True)
    # Left out of every public list, board and the submit form (never deleted while
    # submissions exist: hiding is how a benchmark is taken down).
    hidden = models.BooleanField(default=False)
    # Where the definition came from: "builtin:<file>.toml" (benchmarks/) or "upload".
    source = models.CharField(max_length=200, blank=True)
    # The host team that owns it (docs/hosts/teams.md): its hosts run it, its reviewers review
    # it. Set when the benchmark is created; a bundle from another team cannot update it.
    team = models.ForeignKey(HostTeam, on_delete=models.PROTECT, related_name="benchmarks",
                             default=site_team_id)

    class Meta:
        ordering = ("slug",)

    def __str__(self) -> str:
        return self.slug


class ExampleSet(models.Model):
    class Naming(models.TextChoices):
        INDEX = "index", "Index"
        PATTERN = "pattern", "File-number pattern"
        FILE = "file", "Index-to-name file"

    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="example_sets")
    slug = models.CharField(max_length=SLUG_MAX_LENGTH, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=200)
    size = models.PositiveIntegerField(help_text="Number of examples, in canonical order.")
    description = models.TextField(blank=True)
    # How examples are named (docs/bundles.md §4): "index" (`<slug>[i]`), "pattern" (a file
    # number, name_pattern with {number} or {number:0Nd}, example 0 being first_number) or
    # "file" (the names of its ExampleSetNames row).
    naming = models.CharField(max_length=16, choices=Naming.choices, default=Naming.INDEX)
    name_pattern = models.CharField(max_length=200, blank=True)
    first_number = models.IntegerField(default=1)
    # Where its images are, for running checkpoints and image audits, as its bundle declares
    # them (docs/bundles.md §4.1): {"format", "path" | "setting"}; {} when it declares none.
    images = models.JSONField(default=dict, blank=True)
    # Where its texts are, for showing an example to reviewers (docs/bundles.md §4.2), in the
    # same shape; {} when it declares none.
    texts = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ("benchmark__slug", "slug")

    def __str__(self) -> str:
        return self.slug


class ExampleSetNames(models.Model):
    """The index-to-name list of an example set named by file (IMDB: 25,000 names, Caltech-256
    about 1 MB of JSON). A row of its own, so that the many queries joining an example set never
    read it: only `catalog.selectors.example_namer` does, once per process."""

    example_set = models.OneToOneField(ExampleSet, on_delete=models.CASCADE, primary_key=True,
                                     related_name="names_row")
    names = models.JSONField()

    def __str__(self) -> str:
        return f"names of {self.example_set_id}"


class LabelSet(models.Model):
    class Kind(models.TextChoices):
        SINGLE = "single", "Single label"
        MULTI = "multi", "Multiple labels"
        SOFT = "soft", "Soft labels (distribution)"

    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="label_sets")
    example_set = models.ForeignKey(ExampleSet, on_delete=models.PROTECT, related_name="label_sets")
    slug = models.CharField(max_length=SLUG_MAX_LENGTH, validators=[slug_validator])
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # Its family (workers/scoring/families: how it is built, scored, reviewed and described),
    # e.g. "corrected", "real", "soft".
    family = models.CharField(max_length=32)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    citation = models.TextField(blank=True)
    params = models.JSONField(default=dict, blank=True)
    # Whether its missed predictions feed the review queue (docs/metrics.md §11): the bundle's
    # `reviewable` list.
    reviewable = models.BooleanField(default=False)
    # The bundle's kind (docs/bundles.md §5), one of the families' registry; `kind` and
    # `family` are what it compiles to (§6). No choices here: a new family adds a kind
    # without a migration.
    bundle_kind = models.CharField(max_length=16, blank=True)
    # A hidden label set (docs/bundles.md, hidden label sets): its labels never leave the
    # server; per submission only the number its release mechanism gives is shown
    # (docs/metrics.md §17). Not to be confused with Benchmark.hidden (taken down).
    labels_hidden = models.BooleanField(default=False)
    # "exact", "ladder" or "parameter_free" for a hidden label set; "" for a public one.
    release = models.CharField(max_length=16, blank=True)
    # The Ladder's step size (eta); null: the default for its size (docs/metrics.md §17).
    release_step = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ("benchmark__slug", "slug")
        constraints = [
            models.UniqueConstraint(
                fields=("benchmark", "slug"), name="labelset_unique_slug_per_benchmark"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.benchmark.slug}/{self.slug}"


class HiddenPhase(models.Model):
    """One phase of a hidden label set (docs/metrics.md §17.4): which of its examples are
    private (scored at once, shown only once staff reveal them) and which public (what the
    release mechanism scores). Phase 1 comes from the bundle; after a reveal, staff may open
    the next with a fresh split. The split is never shown: knowing it would focus an attack."""

    label_set = models.ForeignKey(LabelSet, on_delete=models.PROTECT, related_name="phases")
    number = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    size = models.PositiveIntegerField()
    # np.packbits of the private examples, in example order; null: no split (all public).
    private_mask = models.BinaryField(null=True, editable=False)
    # How the split was made, for the record: a seeded fraction, or a listed file ("").
    fraction = models.FloatField(null=True)
    seed = models.BigIntegerField(null=True)
    opened = models.DateTimeField(auto_now_add=True)
    revealed = models.DateTimeField(null=True, blank=True)
    revealed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ("label_set", "number")
        constraints = [
            models.UniqueConstraint(fields=("label_set", "number"),
                                    name="hiddenphase_unique_number"),
        ]

    def __str__(self) -> str:
        return f"{self.label_set} phase {self.number}"


class ImmutableVersionError(RuntimeError):
    """A label-set version was about to be changed; versions are never edited."""


class LabelSetVersionQuerySet(models.QuerySet["LabelSetVersion"]):
    def update(self, **kwargs: Any) -> int:
        raise ImmutableVersionError(
            "label-set versions are immutable: create a new version instead of updating"
        )

    def publish(self, when: datetime) -> int:
        """Mark the unpublished versions among these published at `when`; the one change a
        version ever sees (catalog.services.label_set_version_publish). Returns how many."""
        return models.QuerySet.update(self.filter(published__isnull=True), published=when)


class LabelSetVersion(models.Model):
    """One immutable state of a label set. Every score names the version it was computed on."""

    label_set = models.ForeignKey(LabelSet, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    content_hash = models.CharField(max_length=64, validators=[content_hash_validator])
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    created = models.DateTimeField(auto_now_add=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        # PROTECT, not SET_NULL: a version is never changed; deactivate its author instead.
        on_delete=models.PROTECT,
        related_name="label_set_versions",
    )
    note = models.TextField(blank=True)
    summary = models.JSONField(default=dict, blank=True)
    # When the version became the one boards and the API show by default: at once for a
    # version nobody's scores depend on (the first, loaded from the data files), else when
    # every scored submission has its score on it (the re-scoring job publishes it in the
    # transaction that finishes it: docs/metrics.md §14). Null while it is being re-scored.
    published = models.DateTimeField(null=True, blank=True)

    objects = LabelSetVersionQuerySet.as_manager()

    class Meta:
        ordering = ("label_set", "number")
        constraints = [
            models.UniqueConstraint(
                fields=("label_set", "number"), name="labelsetversion_unique_number"
            ),
            models.CheckConstraint(
                condition=models.Q(number__gte=1), name="labelsetversion_number_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.label_set} v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableVersionError(
                f"{self} is immutable: create a new version instead of saving this one"
            )
        super().save(*args, **kwargs)


# A benchmark bundle (.zip) uploaded by staff, added by a worker (docs/bundles.md §7, the
# service `leaderboard.catalog.hosting.services`). The upload is untrusted: the web process only
# stores it; the worker extracts, checks and loads it.
def bundle_upload_path(upload: BundleUpload, filename: str) -> str:
    """A folder of its own per upload, so that the stored file keeps the uploaded name
    (cleaned by the storage): the worker's refusals name the archive the maintainer sent."""
    return f"bundles/{uuid.uuid4().hex}/{filename}"


class BundleUpload(ClaimedJob):
    """One uploaded bundle: a job a worker claims (leaderboard/jobs/), `finished_at` when
    done or failed. A failure keeps the refusal's code (`failure_code`), message
    (`failure_reason`), file and field."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    bundle = models.FileField(upload_to=bundle_upload_path, max_length=300)
    # The name the uploader's file had (shown; the stored name is cleaned).
    original_name = models.CharField(max_length=255)
    size = models.PositiveBigIntegerField()
    # Add label sets to an existing benchmark (benchmark_add --update) instead of a new one.
    update = models.BooleanField(default=False)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                                    related_name="bundle_uploads")
    # The team the benchmark is added for (a new one belongs to it; an update must be its own).
    team = models.ForeignKey(HostTeam, on_delete=models.PROTECT, related_name="bundle_uploads",
                             default=site_team_id)
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    # Once done: the benchmark created or updated, and what the loader reported, line by line.
    benchmark_slug = models.CharField(max_length=SLUG_MAX_LENGTH, blank=True)
    report = models.TextField(blank=True)
    # Once failed: where the refusal points (BundleError.as_dict()'s file and field; its code
    # and message are the job's failure_code and failure_reason).
    error_file = models.CharField(max_length=500, blank=True)
    error_field = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ("-created", "-id")

    def __str__(self) -> str:
        return f"bundle upload #{self.pk} {self.original_name}"

    @property
    def pending(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)
