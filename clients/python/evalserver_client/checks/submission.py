"""A whole submission's files against one benchmark, as the API describes it
(`GET /api/benchmarks/<slug>/`: its classes and example sets): the checks the server makes on
an upload before it stores anything (the evalserver's docs/api.md §6.1), each file's every
problem reported rather than only the first one met."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import EXTENSIONS, Content, PredictionProblem, check_file

# The server's default upload limit (EVALSERVER_MAX_UPLOAD_BYTES); its operator may change it,
# and the API does not say it, so a larger file is only warned of.
DEFAULT_MAX_UPLOAD_BYTES = 512 * 2**20


@dataclass
class FileVerdict:
    example_set: str
    path: Path
    content: Content | None = None
    problem: PredictionProblem | None = None
    in_file: bool = False  # a problem of the file's content: the server's message names the set
    notes: list[str] = field(default_factory=list)

    @property
    def message(self) -> str | None:
        """The problem in the server's words (its API answer's `message`)."""
        if self.problem is None:
            return None
        return f"{self.example_set}: {self.problem}" if self.in_file else str(self.problem)

    def as_json(self) -> dict[str, Any]:
        problem = self.problem
        return {"image_set": self.example_set, "path": str(self.path), "ok": problem is None,
                "code": problem.code if problem else None, "message": self.message,
                "row": problem.row if problem else None,
                "column": problem.column if problem else None,
                "content": None if self.content is None else vars(self.content),
                "notes": self.notes}


@dataclass
class SubmissionVerdict:
    benchmark: str
    files: list[FileVerdict]
    problems: list[PredictionProblem]  # about the submission as a whole: a missing file

    @property
    def ok(self) -> bool:
        return not self.problems and all(f.problem is None for f in self.files)

    def as_json(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "ok": self.ok,
                "files": [f.as_json() for f in self.files],
                "problems": [{"code": p.code, "message": p.message} for p in self.problems]}


def submission_check(benchmark: Mapping[str, Any], files: Mapping[str, str | os.PathLike[str]]
                     ) -> SubmissionVerdict:
    """Every file of `files` (example set slug -> path) checked against `benchmark` (the API's
    answer), as the server would check the upload."""
    slug = str(benchmark["slug"])
    sizes = {str(s["slug"]): int(s["size"]) for s in benchmark["image_sets"]}
    main = str(benchmark["main_image_set"])
    verdicts = [_file_verdict(slug, sizes, int(benchmark["num_classes"]), name, Path(path))
                for name, path in files.items()]
    problems = []
    if not files:
        problems.append(PredictionProblem(
            "no_files", f"attach one predictions file per example set; {slug} has "
            + ", ".join(sorted(sizes))))
    elif main not in files:
        problems.append(PredictionProblem(
            "missing_main_image_set", f"a {slug} submission needs predictions for {main}"))
    return SubmissionVerdict(slug, verdicts, problems)


def _file_verdict(slug: str, sizes: dict[str, int], num_classes: int, name: str,
                  path: Path) -> FileVerdict:
    verdict = FileVerdict(name, path)
    if name not in sizes:
        verdict.problem = PredictionProblem(
            "unknown_image_set",
            f"{name!r} is not an example set of {slug}; use " + ", ".join(sorted(sizes)))
        return verdict
    if path.suffix.lower() not in EXTENSIONS:
        verdict.problem = PredictionProblem(
            "unsupported_format", f"{path.name!r}: use one of {', '.join(EXTENSIONS)}")
        return verdict
    size = path.stat().st_size
    if size == 0:
        verdict.problem = PredictionProblem("empty_file", f"{path.name!r} is empty")
        return verdict
    if size > DEFAULT_MAX_UPLOAD_BYTES:
        verdict.notes.append(f"{size} bytes: over the servers' default upload limit of "
                             f"{DEFAULT_MAX_UPLOAD_BYTES} bytes (512 MiB)")
    try:
        verdict.content = check_file(path, num_examples=sizes[name], num_classes=num_classes)
    except PredictionProblem as problem:
        verdict.problem, verdict.in_file = problem, True
    return verdict
