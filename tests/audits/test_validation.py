"""What an audit must have before it is queued: a known kind and benchmark, options in range,
and for confident learning scored submissions of the benchmark whose files hold scores; for
AUL an example set whose images the server has. Nothing is stored when it is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.audits.inputs import AuditError
from leaderboard.audits.models import Audit
from tests import factories
from tests.api_support import api_client
from tests.audits.conftest import maintainer, start, submit_mnist
from tests.helpers import mnist_labels, mnist_probs

pytestmark = pytest.mark.django_db


def _refused(**kwargs: Any) -> AuditError:
    with pytest.raises(AuditError) as caught:
        start(maintainer(), **kwargs)
    assert Audit.objects.count() == 0
    return caught.value


def _error(exc: AuditError) -> tuple[str, str, str | None]:
    return exc.code, exc.message, exc.field


def test_it_refuses_an_unknown_kind(loaded: Settings) -> None:
    assert _error(_refused(kind="vibes")) == (
        "invalid_kind", "kind must be one of confident_learning, aul", "kind")


@pytest.mark.parametrize(("config", "expected"), [
    ({"epochs": 0}, ("epochs must be an integer in [1, 200], got 0", "config.epochs")),
    ({"epochs": 201}, ("epochs must be an integer in [1, 200], got 201", "config.epochs")),
    ({"epochs": "5"}, ("epochs must be an integer in [1, 200], got '5'", "config.epochs")),
    ({"epochs": True}, ("epochs must be an integer in [1, 200], got True", "config.epochs")),
    ({"epochs": 2.5}, ("epochs must be an integer in [1, 200], got 2.5", "config.epochs")),
    ({"lr": 0}, ("lr must be a number in (0, 10], got 0", "config.lr")),
    ({"device": "tpu"}, ("device must be one of auto, cpu, cuda, got 'tpu'", "config.device")),
    ({"max_candidates": 1001},
     ("max_candidates must be an integer in [0, 1000], got 1001", "config.max_candidates")),
    ({"filter_by": "both"},
     ("unknown option 'filter_by' for a aul audit; known: epochs, batch_size, lr, momentum, "
      "channels, seed, bins, gmm_n_init, num_threads, device, max_candidates",
      "config.filter_by")),
])
def test_it_refuses_bad_aul_options(loaded: Settings, config: dict[str, Any],
                                    expected: tuple[str, str]) -> None:
    assert _error(_refused(kind="aul", config=config)) == ("invalid_config", *expected)


def test_it_fills_in_the_cores_defaults(loaded: Settings) -> None:
    audit = start(maintainer(), kind="aul", config={"epochs": 3, "lr": 0.05})
    assert audit.config == {"epochs": 3, "batch_size": 128, "lr": 0.05, "momentum": 0.9,
                            "channels": 16, "seed": 0, "bins": 50, "gmm_n_init": 1,
                            "num_threads": 1, "device": "auto", "max_candidates": 100}
    assert (audit.status, audit.example_set.slug, audit.label_set.slug) == \
        ("queued", "mnist-test", "corrected")


def test_it_refuses_confident_learning_without_submissions(loaded: Settings) -> None:
    assert _error(_refused(kind="confident_learning")) == (
        "no_submissions",
        "confident learning needs at least one scored submission with probabilities",
        "submission_ids")


def test_it_refuses_bad_confident_learning_options(loaded: Settings, data_dir: Path,
                                                   tmp_path: Path) -> None:
    submission = submit_mnist(mnist_probs(data_dir), tmp_path)
    exc = _refused(kind="confident_learning", submission_ids=[submission.pk],
                   config={"filter_by": "magic"})
    assert exc.code == "invalid_config" and exc.field == "config.filter_by"
    assert exc.message.startswith("filter_by must be one of prune_by_noise_rate, prune_by_class")
    exc = _refused(kind="confident_learning", submission_ids=[submission.pk],
                   config={"frac_noise": 0})
    assert _error(exc) == ("invalid_config", "frac_noise must be a number in (0, 1], got 0",
                           "config.frac_noise")


def test_it_refuses_submissions_it_cannot_use(loaded: Settings, data_dir: Path,
                                              tmp_path: Path) -> None:
    probs = submit_mnist(mnist_probs(data_dir), tmp_path, "probs")
    ids_only = submit_mnist(mnist_labels(data_dir), tmp_path, "ids-only")
    queued = submit_mnist(mnist_probs(data_dir), tmp_path, "queued", scored=False)
    cifar = factories.submission_for_model(data_dir, "resnet_basic_110")
    missing = cifar.pk + 1000
    cases = [
        (ids_only, ("no_probabilities", f"submission #{ids_only.pk} (ids-only) uploaded class "
                    "ids only for mnist-test; confident learning needs a score matrix "
                    "[N, classes]")),
        (queued, ("invalid_submission", f"submission #{queued.pk} is queued, not scored")),
        (cifar, ("invalid_submission", f"submission #{cifar.pk} is on cifar10, not mnist")),
    ]
    for bad, (code, message) in cases:
        exc = _refused(kind="confident_learning", submission_ids=[probs.pk, bad.pk])
        assert _error(exc) == (code, message, "submission_ids")
    exc = _refused(kind="confident_learning", submission_ids=[probs.pk, missing])
    assert _error(exc) == ("invalid_submission", f"no submission #{missing}", "submission_ids")


def test_it_refuses_submissions_for_aul(loaded: Settings, data_dir: Path,
                                        tmp_path: Path) -> None:
    submission = submit_mnist(mnist_probs(data_dir), tmp_path)
    assert _error(_refused(kind="aul", submission_ids=[submission.pk])) == (
        "invalid_submission",
        "an AUL audit trains its own probe on the images; it uses no submissions",
        "submission_ids")


def test_it_refuses_aul_where_the_server_has_no_images(loaded: Settings,
                                                       tmp_path: Path) -> None:
    loaded.EVALSERVER_CIFAR10_TEST_BATCH = None
    assert _error(_refused(kind="aul", benchmark="cifar10")) == (
        "no_images", "no images configured for cifar10-test: set EVALSERVER_CIFAR10_TEST_BATCH "
        "to the CIFAR python batch file (such as cifar-10-batches-py/test_batch) of its images",
        "benchmark")
    loaded.EVALSERVER_CIFAR10_TEST_BATCH = tmp_path / "missing_test_batch"
    assert _refused(kind="aul", benchmark="cifar10").code == "no_images"
    exc = _refused(kind="aul", benchmark="imagenet")
    assert exc.code == "no_images"
    assert exc.message.startswith("no images configured for the AUL probe on imagenet-val")
    loaded.EVALSERVER_DATA_DIR = tmp_path
    exc = _refused(kind="aul")
    assert _error(exc) == ("no_images", "no images configured for mnist-test: "
                           f"{tmp_path}/mnist/t10k-images-idx3-ubyte.gz is missing", "benchmark")


def test_it_documents_the_benchmark_as_a_slug_and_refuses_a_slug_naming_none(
        loaded: Settings) -> None:
    client = api_client(maintainer())
    schema = client.get("/api/schema/", {"format": "json"}).json()
    body = schema["components"]["schemas"]["AuditCreateInputRequest"]["properties"]

    assert body["benchmark"] == {
        "type": "string", "minLength": 1, "maxLength": 64,
        "pattern": "^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$",
        "description": "benchmark slug: the audit reads its original labels, candidates go "
                       "to its corrected set"}
    # Benchmarks are data: a well-formed slug naming none is schema-valid, and refused
    response = client.post("/api/audits/", {"kind": "aul", "benchmark": "0"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "unknown_benchmark",
        "message": "benchmark: no benchmark '0'; use one of: 20news, caltech256, cifar10, "
                   "cifar100, imagenet, imdb, mnist",
        "field": "benchmark"}}
    assert Audit.objects.count() == 0


def test_it_answers_api_errors_in_the_error_shape(loaded: Settings) -> None:
    client = api_client(maintainer())
    response = client.post("/api/audits/", {"kind": "aul", "benchmark": "nope"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "unknown_benchmark",
        "message": "benchmark: no benchmark 'nope'; use one of: 20news, caltech256, cifar10, "
                   "cifar100, imagenet, imdb, mnist",
        "field": "benchmark"}}
    response = client.post("/api/audits/", {"kind": "aul", "benchmark": "mnist",
                                            "config": {"epochs": 0}}, format="json")
    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "invalid_config", "message": "epochs must be an integer in [1, 200], got 0",
        "field": "config.epochs"}}
    response = client.post("/api/audits/", {"kind": "cl", "benchmark": "mnist"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "kind"
    assert Audit.objects.count() == 0


def test_it_creates_an_audit_through_the_api(loaded: Settings, data_dir: Path,
                                             tmp_path: Path) -> None:
    submission = submit_mnist(mnist_probs(data_dir), tmp_path)
    response = api_client(maintainer()).post(
        "/api/audits/", {"kind": "confident_learning", "benchmark": "mnist",
                         "submission_ids": [submission.pk, submission.pk],
                         "config": {"max_candidates": 7}}, format="json")
    assert response.status_code == 201
    audit = Audit.objects.get()
    body = response.json()
    assert response["Location"] == body["url"] == f"http://testserver/api/audits/{audit.pk}/"
    assert {k: body[k] for k in ("id", "kind", "benchmark", "image_set", "label_set", "status",
                                 "submission_ids", "config", "candidates_created",
                                 "created_by", "page")} == {
        "id": audit.pk, "kind": "confident_learning", "benchmark": "mnist",
        "image_set": "mnist-test", "label_set": "corrected", "status": "queued",
        "submission_ids": [submission.pk],
        "config": {"filter_by": "prune_by_noise_rate", "frac_noise": 1.0,
                   "min_examples_per_class": 1, "max_candidates": 7},
        "candidates_created": 0, "created_by": "maint",
        "page": f"http://testserver/audits/{audit.pk}/"}
    assert body["summary"]["num_flagged"] is None and body["evidence"] == []


def test_it_shows_the_services_error_on_the_form(loaded: Settings, data_dir: Path,
                                                 tmp_path: Path) -> None:
    ids_only = submit_mnist(np.zeros(10000, dtype=np.int64), tmp_path, "zeros")
    client = Client()
    client.force_login(maintainer())
    response = client.post("/audits/", {"kind": "confident_learning", "benchmark": "mnist",
                                        "submissions": [ids_only.pk], "max_candidates": 5})
    assert response.status_code == 400
    form = response.context["form"]
    assert form.errors == {"submissions": [
        f"submission #{ids_only.pk} (zeros) uploaded class ids only for mnist-test; "
        "confident learning needs a score matrix [N, classes]"]}
    assert Audit.objects.count() == 0
    response = client.post("/audits/", {"kind": "aul", "benchmark": "mnist", "epochs": 500,
                                        "max_candidates": 5})
    assert response.status_code == 400
    assert response.context["form"].errors == {
        "epochs": ["Ensure this value is less than or equal to 200."]}


def test_it_shows_a_queued_audit_that_polls_its_status(loaded: Settings) -> None:
    audit = start(maintainer(), kind="aul", config={"epochs": 1})
    client = Client()
    client.force_login(maintainer())
    html = client.get(f"/audits/{audit.pk}/").content.decode()
    assert f'data-poll-url="/audits/{audit.pk}/status.json"' in html
    assert 'id="status-hint">waiting for a worker.' in html and "leaderboard/status.js" in html
    status = client.get(f"/audits/{audit.pk}/status.json")
    assert status["Cache-Control"].startswith("max-age=0")
    assert status.json() == {"id": audit.pk, "status": "queued", "failure_reason": "",
                             "progress": None, "hint": "waiting for a worker."}
    listing = client.get("/audits/").content.decode()
    assert f'<tr id="audit-{audit.pk}">' in listing and "status-queued" in listing
