"""Reads of participation (docs/hosts/participation.md): a benchmark's rules (its row, or the
defaults), a user's request and acceptance, whether an email is verified."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db.models import QuerySet

from leaderboard.catalog.models import Benchmark, LabelSet
from leaderboard.catalog.teams.permissions import benchmark_user_can_host
from leaderboard.common.email_verification import user_email_verified
from leaderboard.submissions.participation.models import (
    ParticipationMode,
    ParticipationRequest,
    ParticipationRules,
    TermsAcceptance,
)


def terms_sha256(terms: str) -> str:
    return hashlib.sha256(terms.encode()).hexdigest()


def participation_rules_get(*, benchmark: Benchmark) -> ParticipationRules:
    """The benchmark's rules: its row, or (unsaved) the defaults. A benchmark with a hidden
    label set defaults to approval with a verified email: its hidden labels are worth a
    known, reachable participant (docs/hosts/hidden-test-sets.md)."""
    rules = ParticipationRules.objects.filter(benchmark=benchmark).first()
    if rules is not None:
        return rules
    hidden = LabelSet.objects.filter(benchmark=benchmark, labels_hidden=True).exists()
    return ParticipationRules(
        benchmark=benchmark,
        mode=ParticipationMode.APPROVAL if hidden else ParticipationMode.OPEN,
        require_verified_email=hidden, terms="", terms_sha256="")


def participation_request_for_user(*, user: Any, benchmark: Benchmark
                                   ) -> ParticipationRequest | None:
    if not user.is_authenticated:
        return None
    return ParticipationRequest.objects.filter(user=user, benchmark=benchmark).first()


def participation_request_list(*, benchmark: Benchmark, status: str | None = None
                               ) -> QuerySet[ParticipationRequest]:
    """The benchmark's requests, newest first (optionally of one status)."""
    requests = ParticipationRequest.objects.filter(benchmark=benchmark).select_related(
        "user", "decided_by")
    return requests.filter(status=status) if status else requests


def participation_request_get(*, benchmark: Benchmark, request_id: int) -> ParticipationRequest:
    """Raises ParticipationRequest.DoesNotExist (also for another benchmark's request)."""
    return ParticipationRequest.objects.select_related("user", "decided_by").get(
        benchmark=benchmark, pk=request_id)


def terms_acceptance_get(*, user: Any, benchmark: Benchmark, sha256: str
                         ) -> TermsAcceptance | None:
    if not user.is_authenticated or not sha256:
        return None
    return TermsAcceptance.objects.filter(user=user, benchmark=benchmark,
                                          terms_sha256=sha256).first()


def email_unverified_message(*, benchmark: Benchmark) -> str:
    return (f"{benchmark.slug} requires a verified email address: verify yours on your "
            "account page first")


def _refusal(*, benchmark: Benchmark, rules: ParticipationRules, is_host: bool,
             request: ParticipationRequest | None, email_verified: bool,
             terms_accepted: bool) -> tuple[str, str] | None:
    """The first rule the user fails, as (code, message): approval (its hosts are exempt),
    then a verified email, then the current terms; None when they may submit."""
    where = f"/benchmarks/{benchmark.slug}/participation/"
    if rules.mode == ParticipationMode.APPROVAL and not is_host and (
            request is None or request.status != ParticipationRequest.Status.APPROVED):
        state = ("your request is pending" if request is not None
                 and request.status == ParticipationRequest.Status.PENDING
                 else "your request was refused" if request is not None
                 else f"ask to join at {where}")
        return ("participation_required",
                f"{benchmark.slug} admits participants by approval of its hosts: {state}")
    if rules.require_verified_email and not email_verified:
        return ("email_unverified", email_unverified_message(benchmark=benchmark))
    if rules.terms_sha256 and not terms_accepted:
        return ("terms_not_accepted",
                f"accept the current terms of {benchmark.slug} first, at {where}")
    return None


def participation_refusal(*, user: Any, benchmark: Benchmark) -> tuple[str, str] | None:
    """Why this user may not submit to the benchmark now, as (code, message), or None. Asked
    of every submission: each fact is read only where a rule needs it."""
    rules = participation_rules_get(benchmark=benchmark)
    approval = rules.mode == ParticipationMode.APPROVAL
    is_host = approval and benchmark_user_can_host(user=user, benchmark=benchmark)
    return _refusal(
        benchmark=benchmark, rules=rules, is_host=is_host,
        request=(participation_request_for_user(user=user, benchmark=benchmark)
                 if approval and not is_host else None),
        email_verified=rules.require_verified_email and user_email_verified(user=user),
        terms_accepted=bool(rules.terms_sha256) and terms_acceptance_get(
            user=user, benchmark=benchmark, sha256=rules.terms_sha256) is not None)


def participation_standing(*, user: Any, benchmark: Benchmark) -> dict[str, Any] | None:
    """The user's standing on the benchmark, for its pages and the API (None: anonymous)."""
    if not user.is_authenticated:
        return None
    rules = participation_rules_get(benchmark=benchmark)
    request = participation_request_for_user(user=user, benchmark=benchmark)
    acceptance = terms_acceptance_get(user=user, benchmark=benchmark, sha256=rules.terms_sha256)
    is_host = benchmark_user_can_host(user=user, benchmark=benchmark)
    email_verified = user_email_verified(user=user)
    refusal = _refusal(benchmark=benchmark, rules=rules, is_host=is_host, request=request,
                       email_verified=email_verified, terms_accepted=acceptance is not None)
    return {"may_submit": refusal is None,
            "refusal_code": refusal[0] if refusal else None,
            "refusal": refusal[1] if refusal else "",
            "is_host": is_host,
            "request": request,
            "request_status": request.status if request is not None else None,
            "email_verified": email_verified,
            "terms_accepted_at": acceptance.accepted_at if acceptance is not None else None}
