"""Confident learning over a real submission (cleanlab/label-errors' cross-validated MNIST
probabilities) through a real Celery worker: the flags are exactly cleanlab's, the best become
ground-truth candidates, and precision and recall match the vote file."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from cleanlab.filter import find_label_issues
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.audits.models import Audit
from leaderboard.review.ground_truth.models import GroundTruthCandidate
from tests import task_names
from tests.api_support import api_client
from tests.audits.conftest import maintainer, run_in_process, start, submit_mnist, validated
from tests.helpers import mnist_labels, mnist_probs
from workers.audits import softmax


def _wait(audit: Audit, log: Path, timeout: float = 240) -> Audit:
    deadline = time.monotonic() + timeout
    while True:
        audit.refresh_from_db()
        if audit.status in (Audit.Status.DONE, Audit.Status.FAILED):
            return audit
        if time.monotonic() > deadline:
            pytest.fail(f"audit {audit.pk} still {audit.status} after {timeout} s\n"
                        f"{log.read_text() if log.exists() else ''}")
        time.sleep(0.2)


def _candidates(audit: Audit) -> list[GroundTruthCandidate]:
    return list(GroundTruthCandidate.objects.filter(source=f"audit:{audit.pk}").order_by("id"))


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_flags_what_cleanlab_flags_and_creates_candidates(
    loaded: Settings, data_dir: Path, tmp_path: Path, scoring_worker: Path
) -> None:
    probs, labels = mnist_probs(data_dir), mnist_labels(data_dir)
    submission = submit_mnist(probs, tmp_path)
    audit = start(maintainer(), kind="confident_learning", submission_ids=[submission.pk])
    assert _wait(audit, scoring_worker).status == "done", audit.failure_reason

    # n_jobs=1: cleanlab's default forks a process pool, which deadlocks a test process that
    # runs threads (a live server, tqdm's monitor); the flags are the same
    expected = find_label_issues(labels, probs, return_indices_ranked_by="self_confidence",
                                 n_jobs=1)
    assert len(expected) == 15
    result = audit.result
    assert result["flagged"] == expected.tolist()
    assert result["num_flagged"] == 15 and result["num_examples"] == 10000
    # every flag's suggestion differs from its given label here: 15 candidates, in rank order
    candidates = _candidates(audit)
    assert audit.candidates_created == len(candidates) == 15
    assert [c.example_index for c in candidates] == expected.tolist()
    assert [c.given for c in candidates] == labels[expected].tolist()
    assert [c.guessed for c in candidates] == probs[expected].argmax(axis=1).tolist()
    assert {c.label_set.slug for c in candidates} == {"corrected"}
    first = candidates[0].evidence
    assert (first["method"], first["audit"], first["rank"]) == ("confident_learning",
                                                                audit.pk, 1)
    assert first["self_confidence"] == float(probs[expected[0], labels[expected[0]]])
    assert result["candidates"] == {"created": 15, "ids": [c.pk for c in candidates],
                                    "skipped": {"already_open": 0, "same_as_given": 0}}

    errors, checked = validated(data_dir)
    flags = set(expected.tolist())
    hits = len(flags & errors)
    validation = result["validation"]["all"]
    assert validation == {
        "flagged": 15, "validated_errors": len(errors), "true_positives": hits,
        "precision": hits / 15, "recall": hits / len(errors), "checked": len(checked),
        "flagged_checked": len(flags & checked), "precision_checked": hits / len(flags & checked),
    }
    assert result["validation"]["top"] == {"k": 15, **validation}


@pytest.mark.django_db
def test_it_skips_examples_already_in_review_and_stops_at_max_candidates(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    probs, labels = mnist_probs(data_dir), mnist_labels(data_dir)
    submission = submit_mnist(probs, tmp_path)
    first = start(maintainer(), kind="confident_learning", submission_ids=[submission.pk],
                  config={"max_candidates": 5})
    assert run_in_process(first) == "done"
    ranked = find_label_issues(labels, probs, return_indices_ranked_by="self_confidence",
                               n_jobs=1)
    assert [c.example_index for c in _candidates(first)] == ranked[:5].tolist()
    # every example whose argmax is not its given label, lowest self-confidence first
    second = start(maintainer(), kind="confident_learning", submission_ids=[submission.pk],
                   config={"filter_by": "predicted_neq_given", "max_candidates": 40})
    assert run_in_process(second) == "done"
    second.refresh_from_db()
    disagree = find_label_issues(labels, probs, filter_by="predicted_neq_given",
                                 return_indices_ranked_by="self_confidence",
                                 n_jobs=1)
    assert second.result["num_flagged"] == len(disagree) == 87
    open_before = set(ranked[:5].tolist())
    wanted = [int(i) for i in disagree if int(i) not in open_before][:40]
    candidates = _candidates(second)
    assert [c.example_index for c in candidates] == wanted
    assert second.candidates_created == 40
    skipped = sum(int(i) in open_before for i in disagree[: disagree.tolist().index(wanted[-1])])
    assert second.result["candidates"]["skipped"] == {"already_open": skipped,
                                                      "same_as_given": 0}
    assert second.result["validation"]["top"]["k"] == 40
    assert second.result["validation"]["top"]["flagged"] == 40
    assert GroundTruthCandidate.objects.filter(status="open").count() == 45


@pytest.mark.django_db
def test_it_averages_several_submissions_and_reads_logits(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    probs, labels = mnist_probs(data_dir), mnist_labels(data_dir)
    rolled = np.roll(probs, 1, axis=1)  # a poor second model
    logits = np.log(np.clip(rolled, 1e-12, None)) + 3.0  # logits of the same probabilities
    a, b = submit_mnist(probs, tmp_path, "a"), submit_mnist(logits, tmp_path, "b")
    audit = start(maintainer(), kind="confident_learning", submission_ids=[b.pk, a.pk],
                  config={"max_candidates": 0})
    assert run_in_process(audit) == "done"
    audit.refresh_from_db()
    # the logits' softmax is kept in float32, like every matrix the audit reads
    second = softmax(logits.astype(np.float32)).astype(np.float32).astype(np.float64)
    mean = (probs.astype(np.float32).astype(np.float64) + second) / 2
    expected = find_label_issues(labels, mean, return_indices_ranked_by="self_confidence",
                                 n_jobs=1)
    assert audit.result["flagged"] == expected.tolist()
    assert audit.result["submission_ids"] == [str(a.pk), str(b.pk)]
    assert audit.candidates_created == 0 and _candidates(audit) == []


@pytest.mark.django_db
def test_it_reports_a_finished_audit_in_the_api_and_on_its_page(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    submission = submit_mnist(mnist_probs(data_dir), tmp_path)
    audit = start(maintainer(), kind="confident_learning", submission_ids=[submission.pk])
    assert run_in_process(audit) == "done"
    audit.refresh_from_db()
    body = api_client(maintainer()).get(f"/api/audits/{audit.pk}/").json()
    assert body["status"] == "done" and body["candidates_created"] == 15
    summary = body["summary"]
    assert summary["num_flagged"] == 15 and summary["num_examples"] == 10000
    assert summary["noise_rate"] == audit.result["estimated_noise_rate"]
    assert summary["validation"] == audit.result["validation"]
    assert summary["histogram"] is None and summary["mixture"] is None
    assert [e["index"] for e in body["evidence"]] == audit.result["flagged"]

    client = Client()
    client.force_login(maintainer())
    page = client.get(f"/audits/{audit.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    rows = page.context["rows"]
    assert [r.index for r in rows] == audit.result["flagged"]
    top = rows[0]
    assert top.file_name == f"mnist-test[{top.index}]"
    assert top.image is not None and top.image.startswith("data:image/png;base64,")
    assert top.candidate is not None and top.in_review
    assert f'href="/review/mnist/ground-truth/next/?candidate={top.candidate.pk}"' in html
    assert 'id="histogram"' not in html and "data-poll-url" not in html
    assert client.get(f"/audits/{audit.pk}/histogram.csv").status_code == 404
    # the ground-truth page shows the candidate asked for
    review = client.get(f"/review/mnist/ground-truth/next/?candidate={rows[3].candidate.pk}")
    assert review.context["view"].candidate.pk == rows[3].candidate.pk
    listing = client.get("/audits/")
    assert f'href="/audits/{audit.pk}/"' in listing.content.decode()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_sweeps_an_audit_whose_message_was_lost(
    loaded: Settings, data_dir: Path, tmp_path: Path, scoring_worker: Path
) -> None:
    from datetime import timedelta
    from unittest import mock

    from django.utils import timezone

    from leaderboard import queue
    from leaderboard.jobs.sweep import jobs_sweep
    from leaderboard.tasks.registry import JOBS

    submission = submit_mnist(mnist_probs(data_dir), tmp_path)
    with mock.patch.object(queue, "task_send") as send:  # broker down
        audit = start(maintainer(), kind="confident_learning", submission_ids=[submission.pk])
    assert send.call_args_list == [
        mock.call(task_names.RUN_CONFIDENT_LEARNING_AUDIT, audit.pk, countdown=0)]
    assert jobs_sweep(JOBS["audit"]) == []  # queued just now: its message may still come
    Audit.objects.filter(pk=audit.pk).update(queued_at=timezone.now() - timedelta(hours=2))

    assert jobs_sweep(JOBS["audit"]) == [audit.pk]
    assert _wait(audit, scoring_worker).status == "done", audit.failure_reason
    assert audit.result["num_flagged"] == 15
    assert audit.attempts == 1
    assert jobs_sweep(JOBS["audit"]) == []
