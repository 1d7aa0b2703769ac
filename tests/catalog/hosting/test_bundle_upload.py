"""Staff add a benchmark by uploading its bundle (.zip) through the API: the request stores and
queues it; the task (run here in-process, as a worker runs it) checks and loads it, or ends
failed with the refusal's code, file and field and leaves no benchmark row behind. Others get
401 / 403. tests/catalog/hosting/test_bundle_upload_e2e.py runs the same through a real worker and
a browser."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.files.storage import default_storage
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.catalog.models import (
    Benchmark,
    BundleUpload,
    ExampleSet,
    LabelSet,
    LabelSetVersion,
)
from tests import factories
from tests.api_support import api_client
from tests.catalog.toy_bundle import LABELS, MANIFEST, SLUG, process, toy_zip
from tests.workers.scoring.bundles.bundle_files import npy_bytes, toml_dumps, zip_bytes

pytestmark = pytest.mark.django_db

API = "/api/bundles/"


@pytest.fixture
def staff() -> User:
    return factories.host_create("boss")


def upload(client: APIClient, path: Path, *, update: bool = False) -> Any:
    with open(path, "rb") as handle:
        return client.post(API, {"bundle": handle, "update": update}, format="multipart")


def catalog_rows() -> tuple[int, int, int, int]:
    return (Benchmark.objects.count(), ExampleSet.objects.count(), LabelSet.objects.count(),
            LabelSetVersion.objects.count())


def test_it_answers_401_to_anonymous_callers(tmp_path: Path) -> None:
    archive = toy_zip(tmp_path)
    calls: list[Callable[[], Any]] = [
        lambda: upload(api_client(), archive),
        lambda: api_client().get(f"{API}1/"),
        lambda: api_client().post("/api/benchmarks/cifar10/hide/"),
        lambda: api_client().post("/api/benchmarks/cifar10/unhide/"),
    ]
    for call in calls:
        response = call()
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "not_authenticated"
    assert BundleUpload.objects.count() == 0


def test_it_answers_403_to_a_researcher(tmp_path: Path) -> None:
    client = api_client(factories.user_create("researcher"))
    benchmark = Benchmark.objects.create(slug="quiet", name="Quiet", num_classes=3,
                                         main_example_set="quiet-test")
    not_host = "only the hosts and admins of a host team may add or update benchmarks"
    not_its_host = "only the hosts and admins of the team 'site' may do this on 'quiet'"
    responses = [(upload(client, toy_zip(tmp_path)), not_host), (client.get(f"{API}1/"), not_host),
                 (client.post("/api/benchmarks/quiet/hide/"), not_its_host),
                 (client.post("/api/benchmarks/quiet/unhide/"), not_its_host)]
    for response, message in responses:
        assert response.status_code == 403
        assert response.json() == {"error": {"code": "permission_denied", "message": message}}
    assert BundleUpload.objects.count() == 0
    benchmark.refresh_from_db()
    assert benchmark.hidden is False


def test_it_stores_the_zip_and_queues_it_after_commit(
    catalog_settings: Settings, staff: User, sent: list[tuple[str, int]], tmp_path: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:
    archive = toy_zip(tmp_path)
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(api_client(staff), archive, update=True)

    assert response.status_code == 202
    row = BundleUpload.objects.get()
    url = f"http://testserver{API}{row.pk}/"
    assert response.json() == {"id": row.pk, "status": "queued", "url": url}
    assert response["Location"] == url
    assert sent == [("leaderboard.tasks.cpu.add_bundle_upload", row.pk)]
    assert (row.original_name, row.size, row.update, row.uploaded_by) == (
        "toy3.zip", archive.stat().st_size, True, staff)
    with default_storage.open(row.bundle.name, "rb") as stored:
        assert stored.read() == archive.read_bytes()
    assert row.bundle.name.endswith("/toy3.zip")
    detail = api_client(staff).get(url).json()
    assert (detail["status"], detail["benchmark"], detail["report"], detail["error"]) == (
        "queued", None, "", None)


@pytest.mark.parametrize(("name", "content", "code", "status"), [
    ("toy3.tar.gz", b"PK\x03\x04 not really", "unsupported_format", 400),
    ("toy3.zip", b"%PDF-1.7 a document", "bad_zip", 400),
    ("toy3.zip", b"", "empty_file", 400),
])
def test_it_refuses_what_is_not_a_zip_in_the_request(
    catalog_settings: Settings, staff: User, tmp_path: Path, name: str, content: bytes,
    code: str, status: int,
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    response = upload(api_client(staff), path)

    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert response.json()["error"]["field"] == "bundle"
    assert BundleUpload.objects.count() == 0
    assert not (Path(catalog_settings.MEDIA_ROOT) / "bundles").exists()


def test_it_refuses_a_missing_file_and_a_bundle_over_the_upload_cap(
    catalog_settings: Settings, staff: User, tmp_path: Path,
) -> None:
    missing = api_client(staff).post(API, {"update": "true"}, format="multipart")
    assert missing.status_code == 400
    assert missing.json()["error"]["code"] == "required"
    assert missing.json()["error"]["field"] == "bundle"

    archive = toy_zip(tmp_path)
    catalog_settings.EVALSERVER_MAX_UPLOAD_BYTES = archive.stat().st_size - 1
    response = upload(api_client(staff), archive)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "file_too_large"
    assert BundleUpload.objects.count() == 0


def test_it_adds_the_benchmark_in_the_task_once(
    catalog_settings: Settings, staff: User, tmp_path: Path,
) -> None:
    response = upload(api_client(staff), toy_zip(tmp_path))
    upload_id = response.json()["id"]

    assert process(upload_id) == "done"
    assert process(upload_id) == "skipped"  # done: a redelivered message changes nothing
    detail = api_client(staff).get(f"{API}{upload_id}/").json()
    assert (detail["status"], detail["benchmark"], detail["error"]) == ("done", SLUG, None)
    benchmark = Benchmark.objects.get(slug=SLUG)
    assert (benchmark.num_classes, benchmark.main_example_set) == (3, "toy3-test")
    assert sorted(LabelSet.objects.filter(benchmark=benchmark).values_list("slug", flat=True)) \
        == ["corrected", "original"]
    assert LabelSetVersion.objects.filter(label_set__benchmark=benchmark).count() == 2
    # one line per label set (its stored version's hash) and the totals of an empty catalog
    stored = dict(LabelSetVersion.objects.filter(label_set__benchmark=benchmark)
                  .values_list("label_set__slug", "content_hash"))
    assert detail["report"] == "\n".join([
        f"{SLUG} (Toy three)",
        f"  {SLUG}/original: version 1 created (sha256 {stored['original'][:12]}, "
        f"{len(LABELS)} examples)",
        f"  {SLUG}/corrected: version 1 created (sha256 {stored['corrected'][:12]}, "
        f"{len(LABELS)} examples)",
        "Created 1 benchmarks, 1 example sets, 2 label sets, 2 label-set versions. "
        "The database now has 1 benchmarks, 1 example sets, 2 label sets, 2 versions.",
    ])
    rows = catalog_rows()

    # the same bundle again, plain and as an update: accepted, and nothing new is created
    for update in (False, True):
        again = upload(api_client(staff), toy_zip(tmp_path / f"again-{update}"),
                       update=update).json()["id"]
        assert process(again) == "done"
        assert catalog_rows() == rows

    # a bundle that would change the loaded benchmark, without `update`: refused
    renamed = toml_dumps({**MANIFEST, "name": "Toy three, renamed"}).encode()
    taken = upload(api_client(staff),
                   toy_zip(tmp_path / "taken", **{"toy3.toml": renamed})).json()["id"]
    assert process(taken) == "failed"
    error = api_client(staff).get(f"{API}{taken}/").json()["error"]
    assert (error["code"], error["file"], error["field"]) == ("benchmark_exists", "", "")
    assert f"benchmark {SLUG!r} is already loaded" in error["message"]
    assert catalog_rows() == rows
    assert Benchmark.objects.get(slug=SLUG).name == "Toy three"


def _dotdot(folder: Path) -> Path:
    return toy_zip(folder, extra={"toy3/../evil.txt": b"outside"})


def _bomb(folder: Path) -> Path:  # 8 MiB of zeros compress about 1000 to 1
    return toy_zip(folder, "bomb.zip", extra={"toy3/padding.bin": bytes(8 << 20)})


def _pickle(folder: Path) -> Path:  # AudioSet's case: an array of Python objects
    return toy_zip(folder, **{"labels.npy": npy_bytes(np.array(LABELS, dtype=object))})


def _out_of_range(folder: Path) -> Path:  # class 3 of 0..2, on the last example
    return toy_zip(folder, **{"labels.npy": npy_bytes(np.array(LABELS[:-1] + [3]))})


def _deep_toml(folder: Path) -> Path:  # 200,000 nested arrays: past the manifest's limits
    return toy_zip(folder, **{"toy3.toml": b"x = " + b"[\n" * 200_000 + b"]\n" * 200_000})


def _huge_key(folder: Path) -> Path:  # issue 37: one key of 300,000 parts, a 736-byte zip
    key = b"a" + b".a" * 299_999 + b" = 1\n"
    path = folder / "huge-key.zip"
    path.write_bytes(zip_bytes({"toy3/toy3.toml": key}))
    return path


def _dotted_key(folder: Path) -> Path:  # a key of 1,000 parts in the toy manifest
    manifest = toml_dumps(MANIFEST) + "a" + ".a" * 999 + " = 1\n"
    return toy_zip(folder, **{"toy3.toml": manifest.encode()})


@pytest.mark.parametrize(("make", "code", "file", "field", "words"), [
    (_dotdot, "zip_unsafe_entry", "toy3/../evil.txt", "", "a `..` part leads out of the bundle"),
    (_bomb, "zip_bomb", "bomb.zip", "", "'toy3/padding.bin' is compressed more than 200 to 1"),
    (_pickle, "pickle", "toy3/labels.npy", "", "pickles are never loaded"),
    (_out_of_range, "label_out_of_range", "labels.npy", "label_sets.original.labels",
     "label 3 of example 11 is outside 0..2"),
    (_deep_toml, "bad_toml", "toy3.toml", "",
     "line 33: arrays and inline tables nested more than 32 deep"),
    (_huge_key, "bad_toml", "toy3.toml", "", "line 1: longer than 65,536 characters, the most "
     "a manifest's line may have"),
    (_dotted_key, "bad_toml", "toy3.toml", "", "line 10: a key or table header of more than 16 "
     "dotted parts, the most a manifest's key may have"),
], ids=["dotdot", "zip-bomb", "pickle", "label-out-of-range", "deep-toml", "huge-key",
        "dotted-key"])
def test_it_ends_a_refused_bundle_failed_with_its_file_and_field_and_stores_nothing(
    catalog_settings: Settings, staff: User, tmp_path: Path, make: Callable[[Path], Path],
    code: str, file: str, field: str, words: str,
) -> None:
    response = upload(api_client(staff), make(tmp_path))
    assert response.status_code == 202  # the web process only stores it
    upload_id = response.json()["id"]

    assert process(upload_id) == "failed"
    detail = api_client(staff).get(f"{API}{upload_id}/").json()
    assert detail["status"] == "failed"
    error = detail["error"]
    assert (error["code"], error["file"], error["field"]) == (code, file, field)
    assert words in error["message"]
    assert (detail["benchmark"], detail["report"]) == (None, "")
    assert catalog_rows() == (0, 0, 0, 0)
    assert process(upload_id) == "skipped"  # failed for good: a redelivery changes nothing


def test_it_refuses_an_update_of_another_teams_benchmark(
    catalog_settings: Settings, staff: User, tmp_path: Path,
) -> None:
    """A host of another team may upload, but the worker refuses to update a benchmark that
    is not their team's, with its own code, and writes nothing (docs/hosts/teams.md)."""
    assert process(upload(api_client(staff), toy_zip(tmp_path)).json()["id"]) == "done"
    rows = catalog_rows()
    lab_host = factories.host_create("lab-host", team=factories.team_create("lab"))
    renamed = toml_dumps({**MANIFEST, "name": "Toy three, renamed"}).encode()
    answer = upload(api_client(lab_host), toy_zip(tmp_path / "lab", **{"toy3.toml": renamed}),
                    update=True)
    assert answer.status_code == 202
    assert process(answer.json()["id"]) == "failed"
    detail = api_client(lab_host).get(f"{API}{answer.json()['id']}/").json()
    assert (detail["team"], detail["error"]["code"]) == ("lab", "benchmark_other_team")
    assert detail["error"]["message"] == (
        f"benchmark {SLUG!r} belongs to another host team: a bundle can add or update only "
        "its own team's benchmarks")
    assert catalog_rows() == rows
    assert Benchmark.objects.get(slug=SLUG).name == "Toy three"
    # and the site team's host does not see the lab's upload
    assert api_client(staff).get(f"{API}{answer.json()['id']}/").status_code == 404


def test_it_adds_a_new_benchmark_for_the_uploaders_team_named_when_several(
    catalog_settings: Settings, tmp_path: Path,
) -> None:
    lab, other = factories.team_create("lab"), factories.team_create("other-lab")
    both = factories.host_create("both", team=lab)
    factories.team_role_give(both, "admin", other)
    factories.reviewer_create("only-reviews", team=other)
    client = api_client(both)
    unnamed = upload(client, toy_zip(tmp_path / "a"))
    assert (unnamed.status_code, unnamed.json()["error"]) == (400, {
        "code": "team_required", "field": "team",
        "message": "you host for several teams: name the one this bundle is for "
                   "(team: lab, other-lab)"})
    reviewer = api_client(User.objects.get(username="only-reviews"))
    with toy_zip(tmp_path / "b").open("rb") as handle:
        refused = reviewer.post(API, {"bundle": handle, "team": "other-lab"},
                                format="multipart")
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "permission_denied")
    with toy_zip(tmp_path / "c").open("rb") as handle:
        unknown = client.post(API, {"bundle": handle, "team": "nowhere"}, format="multipart")
    assert (unknown.status_code, unknown.json()["error"]) == (400, {
        "code": "unknown_team", "field": "team", "message": "no host team 'nowhere'"})
    with toy_zip(tmp_path / "d").open("rb") as handle:
        named = client.post(API, {"bundle": handle, "team": "other-lab"}, format="multipart")
    assert named.status_code == 202
    assert process(named.json()["id"]) == "done"
    assert Benchmark.objects.get(slug=SLUG).team == other
    assert BundleUpload.objects.count() == 1


def test_it_answers_404_for_an_unknown_upload(staff: User) -> None:
    response = api_client(staff).get(f"{API}12345/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_it_hides_and_shows_a_benchmark_for_its_hosts(staff: User) -> None:
    benchmark = Benchmark.objects.create(slug="quiet", name="Quiet", num_classes=3,
                                         main_example_set="quiet-test")
    generation = benchmark.leaderboard_generation
    client = api_client(staff)

    hidden = client.post("/api/benchmarks/quiet/hide/")
    assert hidden.status_code == 200
    assert hidden.json() == {"slug": "quiet", "hidden": True}
    benchmark.refresh_from_db()
    assert benchmark.hidden is True
    assert benchmark.leaderboard_generation == generation + 1  # cached boards let go
    assert client.post("/api/benchmarks/quiet/hide/").json() == {"slug": "quiet",
                                                                 "hidden": True}
    benchmark.refresh_from_db()
    assert benchmark.leaderboard_generation == generation + 1  # no change, no bump

    shown = client.post("/api/benchmarks/quiet/unhide/")
    assert shown.status_code == 200
    assert shown.json() == {"slug": "quiet", "hidden": False}
    benchmark.refresh_from_db()
    assert (benchmark.hidden, benchmark.leaderboard_generation) == (False, generation + 2)

    missing = client.post("/api/benchmarks/nowhere/hide/")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


def test_it_leaves_a_hidden_benchmark_out_of_the_public_list(staff: User) -> None:
    for slug in ("quiet", "loud"):
        Benchmark.objects.create(slug=slug, name=slug.title(), num_classes=3,
                                 main_example_set=f"{slug}-test")
    api_client(staff).post("/api/benchmarks/quiet/hide/")

    assert [b["slug"] for b in api_client().get("/api/benchmarks/").json()] == ["loud"]
    api_client(staff).post("/api/benchmarks/quiet/unhide/")
    assert [b["slug"] for b in api_client().get("/api/benchmarks/").json()] == ["loud", "quiet"]
