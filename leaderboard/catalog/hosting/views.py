"""The hosts' pages that add a benchmark from a bundle: the upload form with the uploads so far,
and one upload's page (its status while a worker checks it, then the report or the refusal
with its file and field)."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.models import User
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from leaderboard.catalog.hosting.selectors import (
    bundle_upload_get,
    bundle_upload_list,
    host_team_list_hosted_by,
    user_hosts_any_team,
)
from leaderboard.catalog.hosting.services import bundle_upload_create
from leaderboard.catalog.models import BundleUpload
from leaderboard.common.errors import ServiceError
from leaderboard.common.page_access import role_required
from leaderboard.common.uploads import upload_csrf_failure, upload_too_large

UPLOADS_PER_PAGE = 50


# Log in first (redirect), then the hosts of some team only: everyone else gets a 403 page.
host_required = role_required(
    lambda user: user_hosts_any_team(user=user), title="Benchmark bundles",
    message="Only the hosts and admins of a host team can add or update its benchmarks.")


class BundleUploadForm(forms.Form):
    bundle = forms.FileField(
        label="Bundle (.zip)",
        widget=forms.ClearableFileInput(attrs={"accept": ".zip"}),
        help_text="One manifest (<code>*.toml</code>) and the files it names, as "
                  "<code>docs/bundles.md</code> describes.")
    update = forms.BooleanField(
        required=False, label="Add its label sets to the existing benchmark of its slug",
        help_text="Without this, a slug that is already loaded is refused.")
    # Not required: left empty, the uploader's one hosting team (several: the service asks).
    team = forms.ChoiceField(label="Host team", choices=[], required=False,
                             help_text="The team the benchmark belongs to.")

    def __init__(self, *args: object, user: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        teams = [(team.slug, team.name) for team in host_team_list_hosted_by(user=user)]
        self.fields["team"].choices = teams  # type: ignore[attr-defined]
        if len(teams) == 1:
            self.fields["team"].initial = teams[0][0]


def _too_large(form: BundleUploadForm) -> BundleUploadForm:
    limit = settings.EVALSERVER_MAX_UPLOAD_BYTES
    form.is_valid()
    form.errors.clear()
    form.add_error("bundle", f"the bundle is larger than the upload limit of {limit:,} bytes: "
                             "nothing was stored")
    return form


def _create(request: HttpRequest, form: BundleUploadForm) -> BundleUpload | int:
    """The stored upload, or the HTTP status of the errors now on the form."""
    if not form.is_valid():
        return 400
    user = request.user
    assert isinstance(user, User)  # host_required
    try:
        return bundle_upload_create(uploader=user, bundle=form.cleaned_data["bundle"],
                                    update=form.cleaned_data["update"],
                                    team=form.cleaned_data["team"] or None)
    except ServiceError as exc:  # BundleUploadError, and the size cap's file_too_large
        form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        return exc.http_status


# The CSRF check is done inside, after the size cap had its say, as on the submit page: an
# upload refused unread has no token to check, and gets the form with its error, not a bare
# 403. A refused upload stores nothing, so skipping the check then is safe.
@csrf_exempt
@host_required
def bundle_uploads(request: HttpRequest) -> HttpResponse:
    """GET: the form and the uploads. POST: store the bundle and queue it, then go to its
    page; or show the form's errors, nothing stored."""
    status = 200
    if request.method == "POST":
        _ = request.POST  # parse the body now: the size cap may stop it part way
        if upload_too_large(request):
            form, status = _too_large(BundleUploadForm(request.POST, user=request.user)), 413
        else:
            rejected = upload_csrf_failure(request)
            if rejected is not None:
                return rejected
            form = BundleUploadForm(request.POST, request.FILES, user=request.user)
            result = _create(request, form)
            if isinstance(result, BundleUpload):
                messages.success(request, f"Bundle upload #{result.pk} is queued.")
                return redirect("bundle_upload_detail", upload_id=result.pk)
            status = result
    else:
        form = BundleUploadForm(user=request.user)
    page = Paginator(bundle_upload_list(user=request.user), UPLOADS_PER_PAGE).get_page(
        request.GET.get("page"))
    return render(request, "leaderboard/bundle_upload_list.html", {
        "form": form, "page": page, "uploads": page.object_list,
        "max_upload_bytes": settings.EVALSERVER_MAX_UPLOAD_BYTES,
    }, status=status)


def _upload(request: HttpRequest, upload_id: int) -> BundleUpload:
    try:
        return bundle_upload_get(upload_id=upload_id, user=request.user)
    except BundleUpload.DoesNotExist:
        raise Http404("no such bundle upload") from None


def _pending_hint(upload: BundleUpload) -> str:
    if upload.status == BundleUpload.Status.QUEUED:
        return "waiting for a worker."
    if upload.status == BundleUpload.Status.RUNNING:
        return "a worker is checking and loading it."
    return ""


@host_required
def bundle_upload_detail(request: HttpRequest, upload_id: int) -> HttpResponse:
    upload = _upload(request, upload_id)
    return render(request, "leaderboard/bundle_upload_detail.html", {
        "upload": upload, "pending": upload.pending, "pending_hint": _pending_hint(upload)})


@host_required
@require_GET
@never_cache
def bundle_upload_status(request: HttpRequest, upload_id: int) -> JsonResponse:
    """{id, status, hint}: what the upload's page polls while it is pending
    (static/leaderboard/status.js)."""
    upload = _upload(request, upload_id)
    return JsonResponse({"id": upload.pk, "status": upload.status,
                         "hint": _pending_hint(upload)})
