"""The manifest as a family's fields see it (families/declaration.py `BundleLayout`): which
files and settings each label set names, before any file is read."""

from __future__ import annotations

from ..families.declaration import LabelSetDef, Setting
from .model import Bundle


class ManifestLayout:
    """The manifest alone (families/declaration.py `BundleLayout`): which files and settings
    each label set names, before any is read."""

    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle

    @property
    def classes_file(self) -> str | None:
        return self.bundle.classes.file

    @property
    def classes_key_field(self) -> str | None:
        return self.bundle.classes.key_field

    def definition(self, slug: str) -> LabelSetDef:
        return self.bundle.label_set(slug)

    def files_of(self, slug: str) -> tuple[str, ...]:
        ls = self.bundle.label_set(slug)
        return ls.fields.files(self, ls.example_set)

    def setting_of(self, slug: str) -> Setting | None:
        return self.bundle.label_set(slug).fields.setting(self)

    def names_file(self, example_set: str) -> str | None:
        return self.bundle.example_set(example_set).names_file

    def example_naming(self, example_set: str) -> str:
        return self.bundle.example_set(example_set).naming
