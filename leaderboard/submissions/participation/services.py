"""Writes of participation (docs/hosts/participation.md): the hosts set a benchmark's rules and
decide requests; users ask to join and accept the terms. The check every submission passes
is `participation_check` (leaderboard/submissions/services.py, `submission_create`).

Callers check who may do what (the hosts: leaderboard/catalog/teams/permissions.py); these
functions keep the state right: one request per user and benchmark, decided once."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from leaderboard.catalog.models import Benchmark
from leaderboard.common.email_verification import user_email_verified
from leaderboard.common.errors import ServiceError
from leaderboard.submissions.file_checks import SubmissionError
from leaderboard.submissions.participation.models import (
    ParticipationMode,
    ParticipationRequest,
    ParticipationRules,
    TermsAcceptance,
)
from leaderboard.submissions.participation.selectors import (
    email_unverified_message,
    participation_refusal,
    participation_rules_get,
    terms_sha256,
)
from leaderboard.submissions.participation.signals import (
    participation_decided,
    participation_requested,
)

Status = ParticipationRequest.Status


class ParticipationError(SubmissionError):
    """A submission refused by the benchmark's participation rules (403)."""


def participation_check(*, user: Any, benchmark: Benchmark) -> None:
    """Raises ParticipationError (403) unless the user may submit to the benchmark now."""
    refusal = participation_refusal(user=user, benchmark=benchmark)
    if refusal is not None:
        raise ParticipationError(refusal[0], refusal[1], http_status=403)


def participation_rules_set(*, benchmark: Benchmark, by: User | None, mode: str,
                            require_verified_email: bool, terms: str) -> ParticipationRules:
    """The benchmark's rules, its row made on the first write. Changed terms (another text)
    need a new acceptance from every participant before their next submission."""
    terms = terms.strip()
    rules, _ = ParticipationRules.objects.update_or_create(
        benchmark=benchmark,
        defaults={"mode": mode, "require_verified_email": require_verified_email,
                  "terms": terms, "terms_sha256": terms_sha256(terms) if terms else "",
                  "updated_by": by})
    return rules


def participation_request_create(*, user: User, benchmark: Benchmark,
                                 message: str = "") -> ParticipationRequest:
    """Ask to join a benchmark in approval mode (once); its hosts are told once this
    commits."""
    rules = participation_rules_get(benchmark=benchmark)
    if rules.mode != ParticipationMode.APPROVAL:
        raise ServiceError("participation_open",
                           f"{benchmark.slug} is open to everyone: submit directly")
    if rules.require_verified_email and not user_email_verified(user=user):
        raise ServiceError("email_unverified", email_unverified_message(benchmark=benchmark),
                           http_status=403)
    try:
        with transaction.atomic():
            request = ParticipationRequest.objects.create(user=user, benchmark=benchmark,
                                                          message=message.strip())
    except IntegrityError:
        raise ServiceError("already_requested",
                           f"you already asked to join {benchmark.slug}", http_status=409
                           ) from None
    request_id = request.pk
    transaction.on_commit(lambda: participation_requested.send(
        sender=ParticipationRequest, request_id=request_id), robust=True)
    return request


def participation_request_decide(*, request: ParticipationRequest, by: User | None,
                                 approve: bool,
                                 note: str = "") -> ParticipationRequest:
    """Approve or refuse a pending request, once: a conditional update from `pending`, so two
    hosts deciding at once decide it once (the other gets 409 `already_decided`)."""
    status = Status.APPROVED if approve else Status.REFUSED
    now = timezone.now()
    updated = ParticipationRequest.objects.filter(pk=request.pk, status=Status.PENDING).update(
        status=status, decided_by=by, decided_at=now, note=note.strip())
    if not updated:
        raise ServiceError("already_decided", f"request {request.pk} was already decided",
                           http_status=409)
    request_id = request.pk
    transaction.on_commit(lambda: participation_decided.send(
        sender=ParticipationRequest, request_id=request_id), robust=True)
    request.refresh_from_db()
    return request


def terms_accept(*, user: User, benchmark: Benchmark, sha256: str
                 ) -> tuple[TermsAcceptance, bool]:
    """Accept the benchmark's current terms, named by their sha256 (the text the user read):
    (the acceptance, whether it is new). Accepting the same text again changes nothing."""
    rules = participation_rules_get(benchmark=benchmark)
    if not rules.terms_sha256:
        raise ServiceError("no_terms", f"{benchmark.slug} has no terms to accept")
    if sha256 != rules.terms_sha256:
        raise ServiceError("terms_changed", f"the terms of {benchmark.slug} changed since you "
                           "read them: read the current text and accept it",
                           field="terms_sha256", http_status=409)
    acceptance, created = TermsAcceptance.objects.get_or_create(
        user=user, benchmark=benchmark, terms_sha256=sha256)
    return acceptance, created
