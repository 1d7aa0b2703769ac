"""What the server can show of one example, for the review pages: its image (a data URI drawn
from a one-file source, or the file of a folder source, which a view serves as it is) or its
text, as its example set's bundle declares them (docs/bundles.md §4.1 and §4.2); otherwise
why not, and what an operator does about it (docs/operators/examples.md).

A file of a folder source is found from the example set's declaration (the folder that a
server setting or the data directory names) and the example's name (its bundle's pattern or
names file), never from a request, and must resolve inside that folder: a name with `..`, an
absolute name or a symbolic link that points out of the folder is refused, so that neither a
bundle's names nor a link in the folder reaches any other file of the server.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath

from django.conf import settings

from leaderboard.catalog.data_fetch import ManifestError, manifest_read
from leaderboard.catalog.example_images import example_image_pixels_uri
from leaderboard.catalog.image_sources import FORMAT_WORDS, declared_path
from leaderboard.catalog.models import Benchmark, ExampleSet
from leaderboard.catalog.selectors import example_namer
from workers.scoring.datasets import DataError

# A text is shown up to this many characters (a long post scrolls; the page states the rest).
TEXT_SHOWN = 10_000
# At most this many bytes of a text file are read (its full length is then stated in bytes).
TEXT_READ_BYTES = 4 * 1024 * 1024
# The image files a browser shows, by their first bytes (a folder's files are served as they
# are, never decoded by the server): the content type they are served with.
IMAGE_SIGNATURES = ((b"\xff\xd8\xff", "image/jpeg"), (b"\x89PNG\r\n\x1a\n", "image/png"),
                    (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"), (b"BM", "image/bmp"))
TEXT_WORDS = "folder of UTF-8 text files named by the examples"
FIX_SETTING = "An operator sets {setting} to the {words} and restarts the server."


@dataclass(frozen=True)
class Unavailable:
    """Why the server cannot show an example (`what`: "image" or "text"), and what an
    operator does about it: one sentence each."""

    what: str
    reason: str
    remedy: str


@dataclass(frozen=True)
class ImageUri:
    uri: str  # data:image/png;base64,...


@dataclass(frozen=True)
class ImageFile:
    path: Path  # resolved, inside the declared folder
    content_type: str
    name: str  # the example's name


@dataclass(frozen=True)
class ExampleText:
    shown: str  # its first TEXT_SHOWN characters (all of it when shorter)
    characters: int | None  # its length in characters; None when over TEXT_READ_BYTES
    size: int  # its length in bytes

    @property
    def truncated(self) -> bool:
        return self.characters is None or self.characters > len(self.shown)


Shown = ImageUri | ImageFile | ExampleText | Unavailable


def example_shown(*, example_set: ExampleSet, index: int) -> Shown:
    """What a review page shows of example `index`: its text where its set declares texts
    (or, declaring neither, its benchmark is a text benchmark), else its image."""
    if example_set.texts or (not example_set.images
                             and example_set.benchmark.modality == Benchmark.Modality.TEXT):
        return example_text(example_set=example_set, index=index)
    if example_set.images.get("format") == "folder":
        return example_image_file(example_set=example_set, index=index)
    found = _declared_or_unavailable(example_set, "images")
    if isinstance(found, Unavailable):
        return found
    try:
        uri = example_image_pixels_uri(example_set.images["format"], found, index)
    except (DataError, OSError, ValueError) as error:
        return Unavailable("image", f"{found} cannot be read ({error})",
                           f"An operator replaces it with the "
                           f"{FORMAT_WORDS[example_set.images['format']]} of its images.")
    if uri is None:
        return Unavailable("image", f"{found} holds no image {index} in a layout the page "
                           "draws (grayscale or RGB)",
                           f"An operator replaces it with the "
                           f"{FORMAT_WORDS[example_set.images['format']]} of its images.")
    return ImageUri(uri)


def example_image_file(*, example_set: ExampleSet, index: int) -> ImageFile | Unavailable:
    """The image file of example `index` of a set whose images are a folder of files."""
    if example_set.images and example_set.images.get("format") != "folder":
        return Unavailable("image", f"the images of {example_set.slug} are not a folder of "
                           "files", "The page draws them instead.")
    found = _folder_file(example_set, index, "images")
    if isinstance(found, Unavailable):
        return found
    path, name = found
    try:
        with open(path, "rb") as handle:
            head = handle.read(12)
    except OSError as error:
        return _unreadable("image", name, error)
    content_type = next((kind for signature, kind in IMAGE_SIGNATURES
                         if head.startswith(signature)), None)
    if content_type is None and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        content_type = "image/webp"
    if content_type is None:
        return Unavailable("image", f"{name} is not a JPEG, PNG, GIF, WebP or BMP file, which "
                           "is what a browser shows",
                           "An operator converts it to one of these, under the same name.")
    return ImageFile(path=path, content_type=content_type, name=name)


def example_text(*, example_set: ExampleSet, index: int) -> ExampleText | Unavailable:
    """The text of example `index` (read as UTF-8; bytes that are not are replaced)."""
    found = _folder_file(example_set, index, "texts")
    if isinstance(found, Unavailable):
        return found
    path, name = found
    try:
        with open(path, "rb") as handle:
            raw = handle.read(TEXT_READ_BYTES + 1)
            size = os.fstat(handle.fileno()).st_size
    except OSError as error:
        return _unreadable("text", name, error)
    text = raw[:TEXT_READ_BYTES].decode("utf-8-sig", errors="replace")
    return ExampleText(shown=text[:TEXT_SHOWN],
                       characters=len(text) if len(raw) <= TEXT_READ_BYTES else None, size=size)


def _what(key: str) -> str:
    return "text" if key == "texts" else "image"


def _declared_or_unavailable(example_set: ExampleSet, key: str) -> Path | Unavailable:
    """Where the example set's `images` or `texts` are on this server (it exists), or why
    they are not there and what an operator does."""
    declaration: dict[str, str] = getattr(example_set, key)
    what = _what(key)
    if not declaration:
        section = "§4.2" if key == "texts" else "§4.1"
        return Unavailable(what, f"the bundle of {example_set.benchmark.name} declares no "
                           f"{key} for its example set {example_set.slug}",
                           f"A host declares them in the bundle (`{key}`, docs/bundles.md "
                           f"{section}) and loads it again; an operator then puts them where "
                           "it says.")
    words = TEXT_WORDS if key == "texts" else FORMAT_WORDS[declaration["format"]]
    path, named = declared_path(declaration)
    setting = declaration.get("setting")
    if path is None:
        return Unavailable(what, f"{named} is not set",
                           FIX_SETTING.format(setting=named, words=words))
    if not path.exists():
        if setting:
            return Unavailable(what, f"{setting} is {path}, which does not exist",
                               f"An operator points {setting} at the {words} and restarts the "
                               "server.")
        return Unavailable(what, f"{path} is missing", _data_dir_remedy(declaration["path"],
                                                                       words))
    return path


def _data_dir_remedy(relative: str, words: str) -> str:
    """What puts a file the bundle names in the data directory there: `fetch_data` when
    data-sources.toml lists it."""
    benchmark = _fetchable().get(relative)
    if benchmark is not None:
        return (f"An operator runs `python manage.py fetch_data --only {benchmark}`, which "
                "downloads it into the data directory (EVALSERVER_DATA_DIR).")
    return f"An operator puts the {words} there (EVALSERVER_DATA_DIR is the data directory)."


@lru_cache(maxsize=1)
def _fetchable() -> dict[str, str]:
    """The data directory's files `manage.py fetch_data` gets: path -> its --only name."""
    try:
        files = manifest_read(Path(settings.BASE_DIR) / "data-sources.toml")
    except ManifestError:
        return {}
    return {f.path: f.benchmark for f in files}


def _folder_file(example_set: ExampleSet, index: int, key: str) -> tuple[Path, str] | Unavailable:
    """The resolved file of example `index` in the example set's declared folder, and the
    example's name; refused unless it is a regular file inside the folder."""
    found = _declared_or_unavailable(example_set, key)
    if isinstance(found, Unavailable):
        return found
    what = _what(key)
    words = TEXT_WORDS if key == "texts" else FORMAT_WORDS["folder"]
    folder = found.resolve()
    if not folder.is_dir():
        setting = getattr(example_set, key).get("setting")
        return Unavailable(what, f"{found} is not a folder",
                           f"An operator points {setting} at the {words} and restarts the "
                           "server." if setting else f"An operator puts the {words} there.")
    name = example_namer(example_set=example_set)(index)
    relative = PurePosixPath(name)
    outside = Unavailable(
        what, f"{name} is outside the folder {found}",
        "The server shows only files inside the folder, never through a name with `..` or a "
        "link that leads out of it: an operator copies the file in instead of linking to it.")
    if relative.is_absolute() or ".." in relative.parts or "\x00" in name:
        return outside
    try:
        path = (folder / relative).resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError):
        return Unavailable(what, f"the folder {found} has no file {name}",
                           "An operator adds it: the folder holds one file per example, under "
                           "the example's name as its bundle names it.")
    except (OSError, RuntimeError) as error:  # a link loop, a permission
        return _unreadable(what, name, error)
    if not path.is_relative_to(folder):
        return outside
    if not path.is_file():
        return Unavailable(what, f"{name} in the folder {found} is not a file",
                           "An operator makes it a readable file.")
    return path, name


def _unreadable(what: str, name: str, error: Exception) -> Unavailable:
    return Unavailable(what, f"{name} cannot be read ({error})",
                       "An operator makes it a readable file.")
