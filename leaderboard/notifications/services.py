"""Writes of notifications: preferences, webhook endpoints, and the events themselves.

An event is emitted by the code that finished the thing it tells of, after that commits (the
runner of jobs, leaderboard/tasks/registry.py, once a submission is scored or failed and once a
re-scoring
is done), never from model signals: it makes one `NotificationDelivery` per channel the user
opted into (and per matching webhook endpoint), each a job sent by name once this commits
(leaderboard/queue.py). Emitting twice sends once (each delivery has the event's `key`)."""

from __future__ import annotations

import math
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Min
from django.utils import timezone

from leaderboard import queue
from leaderboard.catalog.models import Benchmark, LabelSetVersion
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.catalog.teams.models import HostRequest
from leaderboard.catalog.teams.permissions import HOSTING_ROLES, REVIEWING_ROLES
from leaderboard.catalog.teams.selectors import host_request_decider_ids, team_member_ids
from leaderboard.common.errors import ServiceError
from leaderboard.notifications import signing
from leaderboard.notifications.addresses import webhook_url_check
from leaderboard.notifications.models import (
    Channel,
    Event,
    NotificationDelivery,
    NotificationPreference,
    WebhookEndpoint,
)
from leaderboard.notifications.selectors import (
    EVENTS,
    notification_subscribers_list,
    webhook_endpoints_list,
)
from leaderboard.review.models import ReviewItem, ReviewItemSubmission
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.participation.models import ParticipationRequest

# -- preferences and endpoints --------------------------------------------------------------


def notification_preference_update(*, user: User, event: str,
                                   email: bool, webhook: bool) -> None:
    if event not in {e.value for e in EVENTS}:
        raise ServiceError("unknown_event", f"no event {event!r}", field="event")
    NotificationPreference.objects.update_or_create(
        user=user, event=event, defaults={"email": email, "webhook": webhook})


def webhook_endpoint_create(*, user: User, url: str,
                            benchmark_slug: str = "") -> tuple[WebhookEndpoint, str]:
    """A new endpoint and its secret (the only time the secret is given out); told only of
    the events of the benchmark `benchmark_slug` names, when one does (a hidden benchmark is
    unknown here, as everywhere a participant looks)."""
    benchmark = None
    if benchmark_slug:
        try:
            benchmark = benchmark_get(slug=benchmark_slug)
        except Benchmark.DoesNotExist:
            raise ServiceError("unknown_benchmark", f"no benchmark {benchmark_slug!r}",
                               field="benchmark") from None
    webhook_url_check(url)
    limit = settings.EVALSERVER_WEBHOOK_MAX_ENDPOINTS
    with transaction.atomic():
        _user_locked(user)  # two parallel additions cannot both pass the count
        if WebhookEndpoint.objects.filter(user=user).count() >= limit:
            raise ServiceError("webhook_endpoint_limit", f"you have {limit} webhook endpoints, "
                               f"the most one user may have (EVALSERVER_WEBHOOK_MAX_ENDPOINTS): "
                               f"remove one first", field="url", http_status=409)
        secret = signing.webhook_secret_new()
        endpoint = WebhookEndpoint.objects.create(user=user, url=url, benchmark=benchmark,
                                                  secret=secret)
    return endpoint, secret


def _user_locked(user: User) -> None:
    """Lock the user's row until the transaction ends: the per-user limits are counted under
    it (PostgreSQL; SQLite writes one transaction at a time anyway)."""
    User.objects.select_for_update().filter(pk=user.pk).exists()


def webhook_endpoint_delete(*, user: User, endpoint_id: int) -> None:
    if not WebhookEndpoint.objects.filter(user=user, id=endpoint_id).delete()[0]:
        raise ServiceError("not_found", "no such webhook endpoint", http_status=404)


# -- events ---------------------------------------------------------------------------------


def _payload(event: str, summary: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"event": event, "created": timezone.now().isoformat(), "summary": summary,
            "data": data}


@transaction.atomic
def notification_emit(*, user_id: int, event: str, key: str, payload: dict[str, Any],
                      benchmark_id: int | None = None, email: bool = False,
                      webhook: bool = False) -> list[int]:
    """The deliveries of one event to one user on the channels given (those the user opted
    into), queued once this commits; none made again for a `key` already sent."""
    if key and NotificationDelivery.objects.filter(user_id=user_id, key=key).exists():
        return []
    made: list[NotificationDelivery] = []
    if email:
        made.append(NotificationDelivery.objects.create(
            user_id=user_id, channel=Channel.EMAIL, event=event, key=key, payload=payload))
    if webhook:
        for endpoint in webhook_endpoints_list(user=user_id, benchmark_id=benchmark_id,
                                               for_event=True):
            made.append(NotificationDelivery.objects.create(
                user_id=user_id, channel=Channel.WEBHOOK, endpoint=endpoint, event=event,
                key=key, payload=payload))
    for delivery in made:
        queue.job_queue(kind="notification", variant=delivery.channel, job_id=delivery.pk)
    return [delivery.pk for delivery in made]


def _emit_to_subscribers(event: str, key: str, by_user: dict[int, dict[str, Any]],
                         benchmark_id: int | None) -> None:
    for preference in notification_subscribers_list(event=event, user_ids=list(by_user)):
        notification_emit(user_id=preference.user_id, event=event, key=key,
                          payload=by_user[preference.user_id], benchmark_id=benchmark_id,
                          email=preference.email, webhook=preference.webhook)


TEST_WINDOW = timedelta(hours=1)


@transaction.atomic
def webhook_test_event_send(*, user: User) -> list[int]:
    """A test event to every webhook endpoint of the user (the 'send a test event' button),
    at most EVALSERVER_WEBHOOK_TESTS_PER_HOUR a user (each one's deliveries share a key of
    their own, by which they are counted)."""
    _user_locked(user)
    limit = settings.EVALSERVER_WEBHOOK_TESTS_PER_HOUR
    since = timezone.now() - TEST_WINDOW
    sent = sorted(NotificationDelivery.objects.filter(
        user=user, event=Event.TEST, created__gte=since).exclude(key="").values("key").annotate(
        first=Min("created")).values_list("first", flat=True))  # when each test was sent
    if len(sent) >= limit:
        wait = sent[len(sent) - limit] + TEST_WINDOW - timezone.now()
        seconds = max(math.ceil(wait.total_seconds()), 1)
        raise ServiceError("throttled", f"you sent {limit} test events in the last hour, the "
                           f"most allowed (EVALSERVER_WEBHOOK_TESTS_PER_HOUR); the next may be "
                           f"sent in {seconds} s", http_status=429,
                           details={"retry_after": seconds})
    ids = notification_emit(user_id=int(user.pk), event=Event.TEST, key=f"test:{uuid.uuid4()}",
                            webhook=True, payload=_payload(Event.TEST, "a test event", {}))
    if not ids:
        raise ServiceError("no_webhook_endpoint", "add a webhook endpoint first")
    return ids


def submission_outcome_notify(*, submission_id: int) -> None:
    """`submission.scored` (with its public scores) or `submission.failed` (with the reason),
    to its owner if they opted in; nothing for a submission not finished."""
    submission = Submission.objects.select_related("benchmark").get(id=submission_id)
    about = {"id": submission.pk, "model_name": submission.model_name,
             "benchmark": submission.benchmark.slug}
    if submission.status == Submission.Status.SCORED:
        event = Event.SUBMISSION_SCORED
        # public scores only (Score.objects): a hidden label set's figure is not told
        scores = [{"label_set": score.label_set.slug, "version": score.label_set_version.number,
                   "accuracy": score.accuracy, "correct": score.correct, "total": score.total}
                  for score in Score.objects.filter(submission=submission).select_related(
                      "label_set", "label_set_version").order_by("label_set__slug",
                                                                 "label_set_version__number")]
        payload = _payload(event, f"submission {submission.pk} ({submission.model_name}) was "
                           f"scored on {submission.benchmark.slug}",
                           {"submission": about, "scores": scores})
    elif submission.status == Submission.Status.FAILED:
        event = Event.SUBMISSION_FAILED
        payload = _payload(event, f"submission {submission.pk} ({submission.model_name}) "
                           f"failed on {submission.benchmark.slug}",
                           {"submission": about, "failure_code": submission.failure_code,
                            "failure_reason": submission.failure_reason})
    else:
        return
    _emit_to_subscribers(event, f"submission:{submission.pk}:{event}",
                         {submission.owner_id: payload}, submission.benchmark_id)
    if event == Event.SUBMISSION_SCORED:
        review_queue_notify(benchmark=submission.benchmark)


def review_queue_notify(*, benchmark: Benchmark) -> None:
    """`review.queue_grew` to the benchmark's reviewers (its team's reviewers, hosts and admins:
    docs/hosts/teams.md; no one else's queue) who opted in, when the
    benchmark's open review items reach EVALSERVER_REVIEW_QUEUE_NOTIFY_THRESHOLD, and again at
    each further multiple of it; a queue that empties and grows again is told again (the key
    names its oldest open item)."""
    threshold = settings.EVALSERVER_REVIEW_QUEUE_NOTIFY_THRESHOLD
    open_items = ReviewItem.objects.filter(label_set__benchmark=benchmark,
                                           status=ReviewItem.Status.OPEN)
    count = open_items.count()
    if count < threshold:
        return
    oldest = open_items.order_by("pk").values_list("pk", flat=True).first()
    maintainers = team_member_ids(team_id=benchmark.team_id, roles=REVIEWING_ROLES)
    payload = _payload(Event.REVIEW_QUEUE_GREW, f"the review queue of {benchmark.slug} has "
                       f"{count} open items", {"benchmark": benchmark.slug, "open_items": count,
                                               "threshold": threshold})
    _emit_to_subscribers(Event.REVIEW_QUEUE_GREW,
                         f"review_queue:{benchmark.pk}:{oldest}:{count // threshold}",
                         dict.fromkeys(maintainers, payload), benchmark.pk)


def review_decision_notify(*, item_id: int) -> None:
    """`review.decided` to the owners of the submissions that raised a decided item."""
    item = ReviewItem.objects.select_related("label_set__benchmark", "version").get(id=item_id)
    if item.status != ReviewItem.Status.DECIDED:
        return
    raised = dict(ReviewItemSubmission.objects.filter(item=item).values_list(
        "submission_id", "submission__owner_id"))
    benchmark = item.label_set.benchmark
    about = {"id": item.pk, "benchmark": benchmark.slug, "label_set": item.label_set.slug,
             "example_index": item.example_index, "class_id": item.class_id,
             "verdict": item.verdict,
             "version": item.version.number if item.version is not None else None}
    by_owner: dict[int, dict[str, Any]] = {}
    for owner in set(raised.values()):
        mine = sorted(sid for sid, oid in raised.items() if oid == owner)
        by_owner[owner] = _payload(Event.REVIEW_DECIDED, f"a review item your submission "
                                   f"raised on {benchmark.slug} was decided: {item.verdict}",
                                   {"item": about, "submissions": mine})
    _emit_to_subscribers(Event.REVIEW_DECIDED, f"review_item:{item.pk}:{Event.REVIEW_DECIDED}",
                         by_owner, benchmark.pk)


def _ranked(version: LabelSetVersion) -> dict[int, tuple[float | None, int]]:
    """(accuracy, rank) of each public scored submission on a version; rank 1 is the best,
    ties share a rank (one plus how many are strictly better)."""
    rows = list(Score.objects.filter(
        label_set_version=version, submission__public=True,
        submission__status=Submission.Status.SCORED).values_list("submission_id", "accuracy"))
    ordered = sorted((accuracy for _, accuracy in rows if accuracy is not None), reverse=True)
    return {sid: (accuracy, 1 + sum(1 for other in ordered if other > accuracy)
                  if accuracy is not None else len(ordered) + 1) for sid, accuracy in rows}


def version_scores_changed_notify(*, version_id: int) -> None:
    """`scores.changed` to each owner whose submission's accuracy or rank differs between a
    published version and the version it was made from (before/after of each)."""
    version = LabelSetVersion.objects.select_related("label_set__benchmark", "parent").get(
        id=version_id)
    if version.published is None or version.parent is None:
        return
    before, after = _ranked(version.parent), _ranked(version)
    owners = dict(Submission.objects.filter(id__in=after).values_list("id", "owner_id"))
    changes: dict[int, list[dict[str, Any]]] = {}
    for sid, (accuracy, rank) in sorted(after.items()):
        old = before.get(sid)
        if old is None or old == (accuracy, rank):
            continue
        changes.setdefault(owners[sid], []).append({
            "submission": sid, "label_set": version.label_set.slug,
            "before": {"version": version.parent.number, "accuracy": old[0], "rank": old[1]},
            "after": {"version": version.number, "accuracy": accuracy, "rank": rank}})
    benchmark = version.label_set.benchmark
    payloads = {owner: _payload(Event.SCORES_CHANGED, f"version {version.number} of "
                                f"{benchmark.slug}/{version.label_set.slug} changed your scores",
                                {"benchmark": benchmark.slug, "changes": rows})
                for owner, rows in changes.items()}
    _emit_to_subscribers(Event.SCORES_CHANGED, f"version:{version.pk}:{Event.SCORES_CHANGED}",
                         payloads, benchmark.pk)


def _host_request_about(request: HostRequest) -> dict[str, Any]:
    return {"id": request.pk, "team_slug": request.team_slug, "team_name": request.team_name,
            "requested_by": request.requested_by.username, "status": request.status}


def host_request_created_notify(*, request_id: int) -> None:
    """`host_request.created` to the site admins (the site team's admins, and superusers)
    who opted in: a lab asked to host (docs/hosts/requesting-to-host.md)."""
    request = HostRequest.objects.select_related("requested_by").get(id=request_id)
    deciders = host_request_decider_ids()
    payload = _payload(Event.HOST_REQUEST_CREATED, f"{request.requested_by.username} asked to "
                       f"host as team {request.team_slug!r}",
                       {"request": {**_host_request_about(request), "reason": request.reason}})
    _emit_to_subscribers(Event.HOST_REQUEST_CREATED,
                         f"host_request:{request.pk}:{Event.HOST_REQUEST_CREATED}",
                         dict.fromkeys(deciders, payload), None)


def host_request_decided_notify(*, request_id: int) -> None:
    """`host_request.decided` to the requester, if they opted in: approved (their team is
    made, they are its admin) or refused (with the note)."""
    request = HostRequest.objects.select_related("requested_by").get(id=request_id)
    if request.status == HostRequest.Status.PENDING:
        return
    payload = _payload(Event.HOST_REQUEST_DECIDED, f"your request to host as team "
                       f"{request.team_slug!r} was {request.status}",
                       {"request": {**_host_request_about(request),
                                    "decision_note": request.decision_note}})
    _emit_to_subscribers(Event.HOST_REQUEST_DECIDED,
                         f"host_request:{request.pk}:{Event.HOST_REQUEST_DECIDED}",
                         {request.requested_by_id: payload}, None)


def participation_request_notify(*, request_id: int) -> None:
    """`participation.requested` to the benchmark's hosts (its team's admins and hosts) who
    opted in: a user asked to join (docs/hosts/participation.md)."""
    request = ParticipationRequest.objects.select_related("benchmark", "user").get(id=request_id)
    benchmark = request.benchmark
    hosts = team_member_ids(team_id=benchmark.team_id, roles=HOSTING_ROLES)
    payload = _payload(Event.PARTICIPATION_REQUESTED, f"{request.user.username} asked to join "
                       f"{benchmark.slug}", {"request": {
                           "id": request.pk, "benchmark": benchmark.slug,
                           "user": request.user.username, "message": request.message}})
    _emit_to_subscribers(Event.PARTICIPATION_REQUESTED,
                         f"participation_request:{request.pk}:requested",
                         dict.fromkeys(hosts, payload), benchmark.pk)


def participation_decision_notify(*, request_id: int) -> None:
    """`participation.decided` to the user who asked, if they opted in."""
    request = ParticipationRequest.objects.select_related("benchmark").get(id=request_id)
    if request.status == ParticipationRequest.Status.PENDING:
        return
    benchmark = request.benchmark
    payload = _payload(Event.PARTICIPATION_DECIDED, f"your request to join {benchmark.slug} was "
                       f"{request.status}", {"request": {
                           "id": request.pk, "benchmark": benchmark.slug,
                           "status": request.status, "note": request.note}})
    _emit_to_subscribers(Event.PARTICIPATION_DECIDED,
                         f"participation_request:{request.pk}:decided",
                         {request.user_id: payload}, benchmark.pk)
