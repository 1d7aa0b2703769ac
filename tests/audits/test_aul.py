"""The AUL audit on the real MNIST test images (10,000, a 2-epoch probe: mechanics only; with
so few epochs the mixture's figures mean little, see bench/audit.py): the task stores the noise
rate and the flags, makes candidates of the best ones with the probe's suggested label, and the
report draws the histogram and offers it as CSV and SVG."""

from __future__ import annotations

import csv
import io
import pickle
import time
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.test import Client
from pytest_django.fixtures import Settings

from evalserver.celery import app
from leaderboard.audits.models import Audit
from leaderboard.review.ground_truth.models import GroundTruthCandidate
from leaderboard.tasks.cpu import run_confident_learning_audit
from leaderboard.tasks.gpu import run_aul_audit
from tests.api_support import api_client
from tests.audits.conftest import maintainer, run_in_process, start
from tests.helpers import mnist_labels

SMALL = {"epochs": 2, "max_candidates": 30}
# What a 2-epoch probe (seed 0, one CPU thread) gives on the real MNIST test set.
NUM_FLAGGED, NOISE_RATE = 5624, 0.5730


def _candidates(audit: Audit) -> list[GroundTruthCandidate]:
    return list(GroundTruthCandidate.objects.filter(source=f"audit:{audit.pk}").order_by("id"))


def test_it_routes_the_aul_task_to_the_gpu_queue() -> None:
    router = app.amqp.router
    assert router.route({}, "leaderboard.tasks.gpu.run_aul_audit")["queue"].name == "gpu"
    confident_learning = "leaderboard.tasks.cpu.run_confident_learning_audit"
    assert router.route({}, confident_learning)["queue"].name == "cpu"
    assert {"leaderboard.tasks.gpu.run_aul_audit", confident_learning} <= set(app.tasks)
    limit = settings.EVALSERVER_AUDIT_TIME_LIMIT
    assert limit == 1800
    for task in (run_aul_audit, run_confident_learning_audit):
        assert (task.soft_time_limit, task.time_limit) == (limit - 1, limit)


@pytest.mark.slow
@pytest.mark.django_db
def test_it_runs_an_aul_audit_and_creates_candidates(loaded: Settings, data_dir: Path) -> None:
    audit = start(maintainer(), kind="aul", config=SMALL)
    assert run_in_process(audit) == "done"
    audit.refresh_from_db()
    result = audit.result
    assert (audit.status, audit.failure_reason, audit.claimed_by) == \
        ("done", "", f"audit-task-{audit.pk}")
    assert audit.started is not None and audit.finished_at is not None
    assert (result["num_examples"], result["num_flagged"]) == (10000, NUM_FLAGGED)
    assert round(result["noise_rate"], 4) == NOISE_RATE
    assert result["noise_rate"] == result["mixture"]["components"][1]["weight"]
    assert result["config"]["device"] == "cpu" and result["config"]["epochs"] == 2
    assert "progress" not in result and "aul" not in result
    assert sum(result["histogram"]["counts"]) == 10000
    assert len(result["evidence"]) == NUM_FLAGGED

    labels = mnist_labels(data_dir)
    candidates = _candidates(audit)
    assert audit.candidates_created == len(candidates) == 30
    top = result["evidence"][:30]  # no example had an open candidate; no suggestion is given
    assert [c.example_index for c in candidates] == [e["index"] for e in top]
    assert [c.given for c in candidates] == labels[[e["index"] for e in top]].tolist()
    assert [c.guessed for c in candidates] == [e["suggested_label"] for e in top]
    assert all(c.guessed != c.given for c in candidates)
    assert candidates[0].evidence == {"method": "aul", "audit": audit.pk,
                                      **{k: v for k, v in top[0].items() if k != "index"}}
    assert result["validation"]["top"]["k"] == 30
    assert result["validation"]["all"]["flagged"] == NUM_FLAGGED

    # a redelivered message under another task id finds it done
    assert run_aul_audit.apply(args=[audit.pk], task_id="another").get() == "skipped"

    client = Client()
    client.force_login(maintainer())
    page = client.get(f"/audits/{audit.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    # one chart for wide screens, one for phones: the same bars and curves
    assert html.count("<svg ") == 2
    wide, narrow = (html[start: html.index("</svg>", start)]
                    for start in (html.index("<svg "), html.rindex("<svg ")))
    assert 'viewBox="0 0 720 360" width="100%"' in wide
    assert 'viewBox="0 0 360 330" width="100%"' in narrow
    for svg in (wide, narrow):
        assert svg.count('<polyline class="curve-low"') == 1
        assert svg.count('<polyline class="curve-high"') == 1
        bars = svg[svg.index('<g class="bars">'): svg.index("</g>")]
        assert bars.count("<rect") == 50
        assert "area under the loss curve" in svg and "high-loss component (noisy)" in svg
        assert "examples per bin (log" in svg
    assert page.context["summary"]["noise_rate"] == result["noise_rate"]
    assert len(page.context["rows"]) == 50
    row = page.context["rows"][0]
    assert (row.given, row.suggested) == (top[0]["given_label"], top[0]["suggested_label"])
    assert [label for label, _ in row.figures] == ["AUL", "P(noisy)", "first-epoch loss",
                                                   "last-epoch loss"]

    data = client.get(f"/audits/{audit.pk}/histogram.csv")
    assert data["Content-Type"] == "text/csv"
    assert data["Content-Disposition"] == f'attachment; filename="audit-{audit.pk}-histogram.csv"'
    rows = list(csv.reader(io.StringIO(data.content.decode())))
    histogram = result["histogram"]
    assert rows[0] == ["bin_low", "bin_high", "centre", "count", "low_component",
                       "high_component"]
    assert len(rows) == 51
    assert [int(r[3]) for r in rows[1:]] == histogram["counts"]
    assert [float(r[0]) for r in rows[1:]] == histogram["edges"][:-1]
    assert [float(r[5]) for r in rows[1:]] == histogram["high_curve"]
    image = client.get(f"/audits/{audit.pk}/histogram.svg")
    assert image["Content-Type"] == "image/svg+xml"
    assert image.content.decode().startswith('<?xml version="1.0" encoding="UTF-8"?>\n<svg ')
    assert "examples per bin (log scale)" in image.content.decode()
    linear = client.get(f"/audits/{audit.pk}/histogram.svg?scale=linear")
    assert linear["Content-Disposition"] == \
        f'attachment; filename="audit-{audit.pk}-histogram-linear.svg"'
    assert "examples per bin</text>" in linear.content.decode()
    assert client.get(f"/audits/{audit.pk}/histogram.svg?scale=sqrt").status_code == 404

    summary = api_client(maintainer()).get(f"/api/audits/{audit.pk}/").json()["summary"]
    assert summary["histogram"] == histogram
    assert summary["mixture"] == result["mixture"]
    assert summary["validation"] == result["validation"]


@pytest.mark.django_db
def test_it_fails_with_a_reason_when_the_images_are_gone(loaded: Settings,
                                                         tmp_path: Path) -> None:
    audit = start(maintainer(), kind="aul", config=SMALL)
    loaded.EVALSERVER_DATA_DIR = tmp_path
    assert run_in_process(audit) == "failed"
    audit.refresh_from_db()
    assert audit.status == "failed"
    assert audit.failure_reason == ("no images configured for mnist-test: "
                                    f"{tmp_path}/mnist/t10k-images-idx3-ubyte.gz is missing")
    assert audit.finished_at is not None and audit.candidates_created == 0
    assert _candidates(audit) == []
    client = Client()
    client.force_login(maintainer())
    html = client.get(f"/audits/{audit.pk}/").content.decode()
    assert 'id="failure-reason"' in html and "t10k-images-idx3-ubyte.gz is missing" in html


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_runs_on_a_real_gpu_queue_worker(
    loaded: Settings, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.setenv("EVALSERVER_TEST_WORKER_QUEUES", "gpu")
    log: Path = request.getfixturevalue("scoring_worker")
    audit = start(maintainer(), kind="aul", config=SMALL)
    seen = set()
    deadline = time.monotonic() + 120
    while audit.status not in ("done", "failed"):
        if time.monotonic() > deadline:
            pytest.fail(f"audit still {audit.status}\n{log.read_text()}")
        time.sleep(0.1)
        audit.refresh_from_db()
        seen.add(audit.status)
        progress = (audit.result or {}).get("progress")
        if progress:
            seen.add(f"epoch {progress['epochs_done']}/{progress['epochs_total']}")
    assert audit.status == "done", audit.failure_reason
    assert "leaderboard.tasks.gpu.run_aul_audit" in log.read_text()
    assert audit.result["num_flagged"] == NUM_FLAGGED  # the same bits in another process
    assert audit.candidates_created == 30
    assert "epoch 1/2" in seen  # the page's status poll sees the epochs pass


def _cifar_batch(path: Path, count: int) -> None:
    """A test_batch in the cifar-10-batches-py layout (random pixels; the real file is not in
    the data directory)."""
    data = np.random.default_rng(0).integers(0, 256, (count, 3072), dtype=np.uint8)
    with open(path, "wb") as handle:
        pickle.dump({b"labels": [i % 10 for i in range(count)], b"data": data}, handle,
                    protocol=2)


@pytest.mark.slow
@pytest.mark.django_db
def test_it_audits_cifar10_from_the_configured_test_batch(loaded: Settings,
                                                          tmp_path: Path) -> None:
    loaded.EVALSERVER_CIFAR10_TEST_BATCH = tmp_path / "test_batch"
    _cifar_batch(tmp_path / "test_batch", 50)
    short = start(maintainer(), kind="aul", benchmark="cifar10", config=SMALL)
    assert run_in_process(short) == "failed"
    short.refresh_from_db()
    assert short.failure_reason == "cifar10-test: the source holds 50 images, expected 10000"

    _cifar_batch(tmp_path / "test_batch", 10000)
    audit = start(maintainer(), kind="aul", benchmark="cifar10",
                  config={"epochs": 1, "batch_size": 256, "max_candidates": 3})
    assert run_in_process(audit) == "done"
    audit.refresh_from_db()
    assert audit.example_set.slug == "cifar10-test" and audit.result["num_examples"] == 10000
    assert audit.candidates_created == 3
    assert [c.label_set.benchmark.slug for c in _candidates(audit)] == ["cifar10"] * 3
