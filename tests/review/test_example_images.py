"""The review page shows the example under review (docs/hosts/review-queue.md, "The example"):
ImageNet's JPEG from the folder EVALSERVER_IMAGENET_VAL_DIR names, served as it is on disk to
reviewers only, or a message naming the setting; the same for a hosted benchmark whose
images are a folder in the data directory, where names and links that lead out of the folder
are refused. No ImageNet image is in the data directory here (../shared/data/MANIFEST.md), so
the folder is a few real JPEGs that Pillow writes into tmp_path under ImageNet's names."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client
from PIL import Image
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import LabelSet
from leaderboard.review.models import ReviewItem
from tests import factories
from tests.review.conftest import reviewers
from tests.workers.scoring.bundles.bundle_files import manifest, write_bundle

pytestmark = pytest.mark.django_db

IMAGE_URL = "/review/imagenet/examples/imagenet-val/{}/image"
# ILSVRC2012_val_00000063.JPEG: ReaL accepts jellyfish (107) alone; a model says tiger shark (3).
EXAMPLE, TIGER_SHARK = 62, 3


def _image_bytes(width: int, height: int, kind: str, seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, kind)
    return buffer.getvalue()


def _reviewer_client() -> Client:
    client = Client()
    client.force_login(reviewers(1)[0])
    return client


def _example_block(page: str) -> str:
    return page.split('<div class="review-example">', 1)[1].split("<dl", 1)[0]


@pytest.fixture
def imagenet_item(loaded: Settings) -> ReviewItem:
    return ReviewItem.objects.create(
        label_set=LabelSet.objects.get(benchmark__slug="imagenet", slug="real"),
        example_index=EXAMPLE, class_id=TIGER_SHARK, submission_count=1)


def test_it_says_the_imagenet_image_is_not_available_and_which_setting_makes_it_so(
    imagenet_item: ReviewItem, loaded: Settings, tmp_path: Path
) -> None:
    loaded.EVALSERVER_IMAGENET_VAL_DIR = None
    client = _reviewer_client()
    block = _example_block(client.get("/review/imagenet/next/").content.decode())
    assert "<img" not in block
    assert re.sub(r"\s+", " ", block).strip() == (
        '<div class="review-example-missing" role="note"> <p><strong>The image of '
        "<code>ILSVRC2012_val_00000063.JPEG</code> is not available on this server</strong>: "
        "EVALSERVER_IMAGENET_VAL_DIR is not set.</p> <p class=\"remedy\">An operator sets "
        "EVALSERVER_IMAGENET_VAL_DIR to the folder of image files named by the examples and "
        "restarts the server.</p> </div> </div>")
    assert client.get(IMAGE_URL.format(EXAMPLE)).status_code == 404

    loaded.EVALSERVER_IMAGENET_VAL_DIR = Path("/nonexistent/imagenet/val")
    block = _example_block(client.get("/review/imagenet/next/").content.decode())
    assert ("</strong>: EVALSERVER_IMAGENET_VAL_DIR is /nonexistent/imagenet/val, which does "
            "not exist.</p>") in block
    assert ("An operator points EVALSERVER_IMAGENET_VAL_DIR at the folder of image files named "
            "by the examples and restarts the server.") in block

    loaded.EVALSERVER_IMAGENET_VAL_DIR = tmp_path / "val.tar"
    (tmp_path / "val.tar").write_bytes(b"an archive, not its folder")
    block = _example_block(client.get("/review/imagenet/next/").content.decode())
    assert f"</strong>: {tmp_path}/val.tar is not a folder.</p>" in block
    assert ("An operator points EVALSERVER_IMAGENET_VAL_DIR at the folder of image files named "
            "by the examples and restarts the server.") in block


def test_it_serves_the_imagenet_jpeg_to_reviewers_only(
    imagenet_item: ReviewItem, loaded: Settings, tmp_path: Path
) -> None:
    folder = tmp_path / "val"
    folder.mkdir()
    jpeg = _image_bytes(50, 37, "JPEG", seed=63)
    (folder / "ILSVRC2012_val_00000063.JPEG").write_bytes(jpeg)
    loaded.EVALSERVER_IMAGENET_VAL_DIR = folder
    client = _reviewer_client()
    page = client.get("/review/imagenet/next/").content.decode()
    assert (f'<img class="review-photo" src="{IMAGE_URL.format(EXAMPLE)}" '
            'alt="ILSVRC2012_val_00000063.JPEG">') in page
    assert "<strong>tiger shark</strong>" in page and "jellyfish" in page

    response = client.get(IMAGE_URL.format(EXAMPLE))
    assert response.status_code == 200
    assert response.getvalue() == jpeg
    assert (response["Content-Type"], response["Content-Length"], response["Cache-Control"]) == (
        "image/jpeg", str(len(jpeg)), "private, max-age=86400")
    assert response["Content-Disposition"] == 'inline; filename="ILSVRC2012_val_00000063.JPEG"'
    again = client.get(IMAGE_URL.format(EXAMPLE), HTTP_IF_NONE_MATCH=response["ETag"])
    assert (again.status_code, again.content) == (304, b"")
    since = client.get(IMAGE_URL.format(EXAMPLE),
                       HTTP_IF_MODIFIED_SINCE=response["Last-Modified"])
    assert since.status_code == 304
    assert client.post(IMAGE_URL.format(EXAMPLE)).status_code == 405

    # a participant gets the 403 page, an anonymous visitor the login page
    participant = Client()
    participant.force_login(factories.user_create("participant"))
    assert participant.get(IMAGE_URL.format(EXAMPLE)).status_code == 403
    anonymous = Client().get(IMAGE_URL.format(EXAMPLE))
    assert (anonymous.status_code, anonymous["Location"]) == (
        302, f"/login/?next={IMAGE_URL.format(EXAMPLE)}")
    # outside the set, another benchmark's set, a file the folder lacks: 404
    for url in (IMAGE_URL.format(50_000), "/review/imagenet/examples/mnist-test/0/image",
                "/review/nope/examples/imagenet-val/0/image", IMAGE_URL.format(63)):
        assert client.get(url).status_code == 404, url


def test_it_says_which_file_the_folder_lacks(
    loaded: Settings, tmp_path: Path
) -> None:
    ReviewItem.objects.create(
        label_set=LabelSet.objects.get(benchmark__slug="imagenet", slug="real"),
        example_index=63, class_id=TIGER_SHARK, submission_count=1)
    loaded.EVALSERVER_IMAGENET_VAL_DIR = tmp_path
    block = _example_block(_reviewer_client().get("/review/imagenet/next/").content.decode())
    assert (f"</strong>: the folder {tmp_path} has no file ILSVRC2012_val_00000064.JPEG.</p>"
            in block)
    assert ("An operator adds it: the folder holds one file per example, under the "
            "example&#x27;s name as its bundle names it.") in block


def test_it_refuses_a_link_out_of_the_imagenet_folder(
    imagenet_item: ReviewItem, loaded: Settings, tmp_path: Path
) -> None:
    folder = tmp_path / "val"
    folder.mkdir()
    (tmp_path / "secret.JPEG").write_bytes(_image_bytes(8, 8, "JPEG", seed=1))
    (folder / "ILSVRC2012_val_00000063.JPEG").symlink_to(tmp_path / "secret.JPEG")
    loaded.EVALSERVER_IMAGENET_VAL_DIR = folder
    client = _reviewer_client()
    block = _example_block(client.get("/review/imagenet/next/").content.decode())
    assert "<img" not in block
    assert (f"</strong>: ILSVRC2012_val_00000063.JPEG is outside the folder {folder}.</p>"
            in block)
    assert client.get(IMAGE_URL.format(EXAMPLE)).status_code == 404


def test_it_says_the_cifar10_image_needs_its_test_batch(loaded: Settings) -> None:
    loaded.EVALSERVER_CIFAR10_TEST_BATCH = None
    ReviewItem.objects.create(label_set=LabelSet.objects.get(benchmark__slug="cifar10",
                                                             slug="original"),
                              example_index=5, class_id=1, submission_count=1)
    block = _example_block(_reviewer_client().get("/review/cifar10/next/").content.decode())
    assert ("The image of <code>cifar10-test[5]</code> is not available on this server"
            "</strong>: EVALSERVER_CIFAR10_TEST_BATCH is not set.</p>") in block
    assert ("An operator sets EVALSERVER_CIFAR10_TEST_BATCH to the CIFAR python batch file "
            "(such as cifar-10-batches-py/test_batch) and restarts the server.") in block


def test_it_names_the_fetch_data_command_for_the_missing_mnist_images(
    loaded: Settings, tmp_path: Path
) -> None:
    ReviewItem.objects.create(label_set=LabelSet.objects.get(benchmark__slug="mnist",
                                                             slug="original"),
                              example_index=7, class_id=3, submission_count=1)
    client = _reviewer_client()
    assert 'class="review-image" src="data:image/png;base64,' in client.get(
        "/review/mnist/next/").content.decode()  # the real IDX file (tests/review/test_voting)
    loaded.EVALSERVER_DATA_DIR = tmp_path  # a data directory without it
    block = _example_block(client.get("/review/mnist/next/").content.decode())
    assert (f"</strong>: {tmp_path}/mnist/t10k-images-idx3-ubyte.gz is missing.</p>"
            in block)
    assert ("An operator runs `python manage.py fetch_data --only mnist`, which downloads it "
            "into the data directory (EVALSERVER_DATA_DIR).") in block


# -- a hosted benchmark whose images are a folder in the data directory ----------------------

NAMES = ["toy_001.png", "toy_002.png", "../outside.png", "sub/toy_004.png", "notes.txt",
         "toy_006.png"]


def _hosted(folder: Path, data: Path) -> LabelSet:
    """The toy bundle (tests/workers/scoring/bundles/bundle_files.py) named by a file and
    with its images in data/toy-images: example i is NAMES[i]."""
    document = manifest()
    # the votes name examples by file number, which a set named by a file has not
    document["label_sets"] = [ls for ls in document["label_sets"]
                              if ls["slug"] in ("original", "real")]
    test_set = document["example_sets"][0]
    for key in ("pattern", "first_number"):
        del test_set[key]
    test_set.update(naming="file", names="names.json",
                    images={"format": "folder", "path": "toy-images"})
    bundle = write_bundle(folder, document)
    (folder / "names.json").write_text(json.dumps(NAMES))
    call_command("benchmark_add", str(bundle), stdout=io.StringIO(), stderr=io.StringIO())
    images = data / "toy-images"
    (images / "sub").mkdir(parents=True)
    (images / "toy_001.png").write_bytes(_image_bytes(6, 4, "PNG", seed=1))
    (images / "toy_002.png").symlink_to("toy_001.png")  # a link inside the folder: shown
    (data / "outside.png").write_bytes(_image_bytes(5, 5, "PNG", seed=2))
    (images / "sub/toy_004.png").write_bytes(_image_bytes(9, 7, "JPEG", seed=4))
    (images / "notes.txt").write_text("not an image")
    (images / "toy_006.png").symlink_to(data / "outside.png")  # a link out of it: refused
    return LabelSet.objects.get(benchmark__slug="toy", slug="real")


def test_it_shows_a_hosted_folders_files_and_nothing_outside_it(
    catalog_settings: Settings, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    catalog_settings.EVALSERVER_DATA_DIR = data
    label_set = _hosted(tmp_path / "bundle", data)
    images = data / "toy-images"
    client = _reviewer_client()

    def example(index: int) -> tuple[str, int, bytes, str]:
        item = ReviewItem.objects.create(label_set=label_set, example_index=index, class_id=0,
                                         submission_count=1)
        block = re.sub(r"\s+", " ", _example_block(
            client.get("/review/toy/next/").content.decode())).strip()
        item.delete()
        served = client.get(f"/review/toy/examples/toy-test/{index}/image")
        body = served.getvalue() if served.status_code == 200 else b""
        return block, served.status_code, body, served.get("Content-Type", "")

    url = "/review/toy/examples/toy-test/{}/image"
    png, jpeg = (images / "toy_001.png").read_bytes(), (images / "sub/toy_004.png").read_bytes()
    shown = {0: (png, "image/png"), 1: (png, "image/png"), 3: (jpeg, "image/jpeg")}
    for index, (content, content_type) in shown.items():
        block, status, body, served_type = example(index)
        assert block.startswith(f'<img class="review-photo" src="{url.format(index)}" '
                                f'alt="{NAMES[index]}">'), block
        assert (status, body, served_type) == (200, content, content_type)
    outside = ("The server shows only files inside the folder, never through a name with `..` "
               "or a link that leads out of it: an operator copies the file in instead of "
               "linking to it.")
    refused = {
        2: f"../outside.png is outside the folder {images}.</p> <p class=\"remedy\">{outside}",
        4: "notes.txt is not a JPEG, PNG, GIF, WebP or BMP file, which is what a browser shows."
           "</p> <p class=\"remedy\">An operator converts it to one of these, under the same "
           "name.",
        5: f"toy_006.png is outside the folder {images}.</p> <p class=\"remedy\">{outside}",
    }
    for index, reason in refused.items():
        block, status, body, _ = example(index)
        assert "<img" not in block and status == 404 and body == b""
        assert (f"<strong>The image of <code>{NAMES[index]}</code> is not available on this "
                f"server</strong>: {reason}</p>") in block, block
