"""A human-validation vote file as a bundle declares it (docs/bundles.md §5.2): where its
records are, how they name examples and labels, and what a vote under each of its keys means.
The corrected family (corrected.py) declares one per label set; the bundle code reads it
(workers/scoring/bundles/votes.py)."""

from __future__ import annotations

from dataclasses import dataclass

VOTE_IDS = ("index", "number", "name")
VOTE_LABELS = ("id", "name")
# What one vote means (docs/bundles.md §5.2); "none" is an answer that names no label.
VOTE_MEANINGS = ("original", "guessed", "both", "neither", "none")


@dataclass(frozen=True)
class VoteFileDef:
    file: str
    vocabulary: tuple[tuple[str, str], ...]  # (vote key, meaning), in the manifest's order
    ids: str = "index"  # "index" | "number" | "name"
    id_prefix: str = ""  # ids "name": stripped from each id before the lookup
    id_suffix: str = ""  # ids "name": appended after stripping
    labels: str = "id"  # "id" | "name"
    id_field: str = "id"
    given_field: str = "given_original_label"
    guessed_field: str = "our_guessed_label"
    votes_field: str = "mturk"

    @property
    def meanings(self) -> dict[str, str]:
        return dict(self.vocabulary)
