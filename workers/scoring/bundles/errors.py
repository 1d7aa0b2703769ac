"""The one error every bundle refusal raises: a code, the file, the field and the problem.

docs/bundles.md §8 lists the codes. The web side will map a BundleError to the API's error
shape (`{"error": {"code", "message", "file", "field"}}`); nothing else may escape the
parser, the zip reader or the builders for bad input.
"""

from __future__ import annotations

CODES = frozenset({
    "bad_toml",  # the manifest is not UTF-8 TOML
    "unknown_field",  # a key the schema does not define (here: for this kind, for a public set)
    "missing_field",  # a required key is absent
    "wrong_type",  # a value of the wrong TOML type
    "bad_value",  # a value of the right type that the schema does not allow
    "duplicate_slug",  # two example sets or two label sets with one slug
    "unknown_reference",  # a slug or citation key that the manifest does not declare
    "path_escapes",  # an absolute path, a `..`, or a link that leads out of its folder
    "missing_file",  # a named file that does not exist
    "pickle",  # a pickle or a pickled (object) array, anywhere
    "bad_file",  # a file that is not of the layout its field says
    "length_mismatch",  # a per-example file whose length is not the example set's size
    "label_out_of_range",  # a class id outside 0..count-1
    "duplicate_class",  # a class name (or key) that appears twice
    "unknown_class",  # a label given by a name that no class has
    "unknown_example",  # a vote id that names no example, or several
    "unknown_vote_key",  # a vote key that the vocabulary does not map
    "vote_mismatch",  # a vote file's original label that disagrees with the label file
    "not_configured",  # an optional source (a server setting) that is not set
    "bad_zip",  # not a readable zip archive
    "zip_unsafe_entry",  # an entry with `..`, an absolute name, a link or an odd name
    "zip_bomb",  # more entries, bytes or compression than the caps allow
    "zip_manifest",  # no manifest, or more than one, in the archive
    "hidden_labels_shared",  # two hidden label sets of one labelling, released differently
})


class BundleError(ValueError):
    """A refused bundle. `file` is the manifest or data file, `field` the manifest field
    (dotted, label sets and example sets by slug: `label_sets.corrected.votes.file`)."""

    def __init__(self, code: str, message: str, *, file: str = "", field: str = "") -> None:
        assert code in CODES, code
        self.code = code
        self.file = file
        self.field = field
        self.message = message
        where = ": ".join(part for part in (file, field) if part)
        super().__init__(f"{where}: {message}" if where else message)

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": str(self), "file": self.file, "field": self.field}
