"""HTML forms: they validate what a person typed; services do the writing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms

from leaderboard.catalog.models import Benchmark, ExampleSet
from leaderboard.catalog.selectors import benchmark_visible_list
from leaderboard.submissions.models import Submission

# the database column's limit (URLField: 200 characters)
URL_MAX_LENGTH = Submission._meta.get_field("paper_url").max_length


@dataclass(frozen=True)
class ExampleSetGroup:
    """One benchmark's file inputs on the submit form."""

    benchmark: Benchmark
    fields: list[forms.BoundField]
    quota_left: int | None = None


class BenchmarkChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Benchmark) -> str:
        return f"{obj.name} ({obj.slug})"


class SubmissionForm(forms.Form):
    """The submit page: the plain fields, then one file input per example set of every benchmark.

    File inputs are named by example set slug (unique across benchmarks), exactly like the API's
    multipart fields. Files are checked by `services.submission_create` (formats, sizes, the
    main example set), so the page and the API refuse the same things with the same words.
    """

    benchmark = BenchmarkChoiceField(
        queryset=benchmark_visible_list(), to_field_name="slug",
        empty_label="Choose a benchmark…",
        error_messages={"required": "choose the benchmark",
                        "invalid_choice": "choose one of the benchmarks in the list"},
    )
    model_name = forms.CharField(
        max_length=200, label="Model name",
        error_messages={"required": "name the model"},
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    public = forms.BooleanField(
        required=False, initial=True, label="Public",
        help_text="Shown on the public leaderboard once scored. You can change this later.",
    )
    paper_url = forms.URLField(required=False, label="Paper URL", assume_scheme="https",
                               max_length=URL_MAX_LENGTH,
                               error_messages={"invalid": "enter a full web address (https://…)"})
    code_url = forms.URLField(required=False, label="Code URL", assume_scheme="https",
                              max_length=URL_MAX_LENGTH,
                              error_messages={"invalid": "enter a full web address (https://…)"})

    def __init__(self, *args: Any, example_sets: list[ExampleSet], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.example_sets = example_sets
        for example_set in example_sets:
            main = example_set.slug == example_set.benchmark.main_example_set
            self.fields[example_set.slug] = forms.FileField(
                required=False,
                label=f"{example_set.slug} · {example_set.size:,} rows"
                      + (" · required" if main else " · optional"),
                help_text=example_set.name,
                widget=forms.ClearableFileInput(
                    attrs={"accept": ".npy,.npz,.json,.csv",
                           "data-benchmark": example_set.benchmark.slug}),
                error_messages={"empty": "the file is empty"},
            )

        self.fields["checkpoint"] = forms.FileField(
            required=False, label="Model file (instead of predictions)",
            help_text=".onnx, or .safetensors for the benchmark's own architecture",
            widget=forms.ClearableFileInput(attrs={"accept": ".onnx,.safetensors"}),
            error_messages={"empty": "the file is empty"},
        )

    def groups(self, quota: dict[str, int | None] | None = None) -> list[ExampleSetGroup]:
        """The file inputs grouped by benchmark, in benchmark order."""
        by_benchmark: dict[int, ExampleSetGroup] = {}
        for example_set in self.example_sets:
            benchmark = example_set.benchmark
            if benchmark.pk not in by_benchmark:
                left = (quota or {}).get(benchmark.slug)
                by_benchmark[benchmark.pk] = ExampleSetGroup(benchmark, [], left)
            by_benchmark[benchmark.pk].fields.append(self[example_set.slug])
        return sorted(by_benchmark.values(), key=lambda g: g.benchmark.slug)

    def plain_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in ("model_name", "description", "public",
                                        "paper_url", "code_url")]

    def chosen_files(self) -> dict[str, Any]:
        """The attached files of the chosen benchmark's example sets; a file attached for another
        benchmark is an error on its input."""
        benchmark: Benchmark = self.cleaned_data["benchmark"]
        files: dict[str, Any] = {}
        for example_set in self.example_sets:
            upload = self.cleaned_data.get(example_set.slug)
            if not upload:
                continue
            if example_set.benchmark_id != benchmark.pk:
                self.add_error(example_set.slug,
                               f"{example_set.slug} belongs to {example_set.benchmark.slug}, "
                               f"not {benchmark.slug}: remove this file or choose "
                               f"{example_set.benchmark.slug}")
                continue
            files[example_set.slug] = upload
        return files
