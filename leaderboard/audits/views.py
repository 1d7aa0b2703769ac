"""The maintainers' label-audit pages: the list with a form to start one, and an audit's report
(status while it runs, noise rate, the AUL histogram as inline SVG with CSV and SVG downloads,
precision and recall against the validated errors, the flagged examples)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.models import User
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from leaderboard.audits import selectors as selectors_audits
from leaderboard.audits import services as audits
from leaderboard.audits.charts import NARROW, histogram_csv, histogram_svg
from leaderboard.audits.inputs import MAX_CANDIDATES_DEFAULT, MAX_CANDIDATES_LIMIT
from leaderboard.audits.models import Audit
from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.selectors import benchmark_list_with_role
from leaderboard.catalog.teams.permissions import HOSTING_ROLES, user_is_maintainer
from leaderboard.common.page_access import role_required

AUDITS_PER_PAGE = 50
# the service's field names -> the form's
# The review queue's role, with this page's own words on the 403 page (it said "Review" and
# "the review queue" on /audits/).
# Which audits they read (their teams' benchmarks') and start (the benchmarks they host) is
# their teams' (docs/hosts/teams.md).
reviewer_required = role_required(
    lambda user: user_is_maintainer(user=user), title="Audits",
    message="Only the members of a host team can start and read its label-error audits.")
FIELDS = {"submission_ids": "submissions", "config.epochs": "epochs",
          "config.max_candidates": "max_candidates", "benchmark": "benchmark", "kind": "kind"}


class AuditForm(forms.Form):
    kind = forms.ChoiceField(choices=Audit.Kind.choices, widget=forms.RadioSelect,
                             initial=Audit.Kind.CONFIDENT_LEARNING)
    benchmark = forms.ModelChoiceField(queryset=Benchmark.objects.none(),
                                       to_field_name="slug", empty_label=None)
    submissions = forms.TypedMultipleChoiceField(
        coerce=int, required=False, widget=forms.SelectMultiple(attrs={"size": 8}),
        help_text="Confident learning: scored submissions of the benchmark whose files hold "
                  "scores (probabilities or logits); their probabilities are averaged. "
                  "Ctrl/Cmd-click to choose several.")
    epochs = forms.IntegerField(min_value=1, max_value=200, required=False,
                                widget=forms.NumberInput(attrs={"placeholder": "10"}),
                                help_text="AUL: probe training epochs (default 10; about "
                                          "2 s each on MNIST on one CPU core).")
    max_candidates = forms.IntegerField(
        min_value=0, max_value=MAX_CANDIDATES_LIMIT, initial=MAX_CANDIDATES_DEFAULT,
        help_text="The flags, best first, that become ground-truth candidates.")

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        benchmarks = self.fields["benchmark"]
        assert isinstance(benchmarks, forms.ModelChoiceField)
        benchmarks.queryset = benchmark_list_with_role(
            user=user, roles=HOSTING_ROLES).filter(hidden=False).order_by("slug")
        submissions = self.fields["submissions"]
        assert isinstance(submissions, forms.TypedMultipleChoiceField)
        submissions.choices = [
            (benchmark.name, [(s.pk, f"#{s.pk} {s.model_name} ({s.owner.get_username()})")
                              for s in scored])
            for benchmark, scored in selectors_audits.audit_submission_choices(user=user)]
        self.fields["benchmark"].label_from_instance = lambda b: b.name  # type: ignore[attr-defined]

    def config(self) -> dict[str, Any]:
        data = self.cleaned_data
        config: dict[str, Any] = {}
        if data.get("max_candidates") is not None:
            config["max_candidates"] = data["max_candidates"]
        if data["kind"] == Audit.Kind.AUL and data.get("epochs") is not None:
            config["epochs"] = data["epochs"]
        return config


def _start(request: HttpRequest, form: AuditForm) -> Audit | None:
    if not form.is_valid():
        return None
    data = form.cleaned_data
    user = request.user
    assert isinstance(user, User)
    submission_ids = data["submissions"] if data["kind"] == Audit.Kind.CONFIDENT_LEARNING else []
    try:
        return audits.audit_create(author=user, benchmark=data["benchmark"], kind=data["kind"],
                                   submission_ids=submission_ids, config=form.config())
    except audits.AuditError as exc:
        form.add_error(FIELDS.get(exc.field or ""), exc.message)
        return None


@reviewer_required
def audit_list(request: HttpRequest) -> HttpResponse:
    """GET: the audits and the form. POST: start an audit, then go to its report."""
    status = 200
    if request.method == "POST":
        form = AuditForm(request.POST, user=request.user)
        audit = _start(request, form)
        if audit is not None:
            messages.success(request, f"Audit #{audit.pk} is queued.")
            return redirect("audit_detail", audit_id=audit.pk)
        status = 400
    else:
        form = AuditForm(user=request.user)
    page = Paginator(selectors_audits.audit_list(user=request.user), AUDITS_PER_PAGE).get_page(
        request.GET.get("page"))
    return render(request, "leaderboard/audit_list.html",
                  {"form": form, "page": page, "audits": page.object_list}, status=status)


def _audit(request: HttpRequest, audit_id: int) -> Audit:
    try:
        return selectors_audits.audit_get(audit_id=audit_id, user=request.user)
    except Audit.DoesNotExist:
        raise Http404("no such audit") from None


def _title(audit: Audit) -> str:
    return f"Audit #{audit.pk}: AUL histogram of {audit.example_set.slug}"


@reviewer_required
def audit_detail(request: HttpRequest, audit_id: int) -> HttpResponse:
    audit = _audit(request, audit_id)
    summary = selectors_audits.audit_summary(audit)
    rows = selectors_audits.audit_flag_rows(audit)
    histogram = summary["histogram"]
    review_url = reverse("ground_truth_next", args=[audit.benchmark.slug])
    return render(request, "leaderboard/audit_detail.html", {
        "audit": audit,
        "summary": summary,
        "rows": rows,
        "review_url": review_url,
        # built from numbers, its text escaped: safe to inline
        "svg": mark_safe(histogram_svg(histogram, title=_title(audit))) if histogram else None,
        "svg_narrow": mark_safe(histogram_svg(histogram, title=_title(audit), layout=NARROW,
                                              ident="aul-narrow")) if histogram else None,
        "submissions": audit.submissions.order_by("id"),
        "validation": _validation_rows(summary["validation"]),
        "pending": audit.pending,
        "pending_hint": _pending_hint(audit),
    })


def _validation_rows(validation: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not validation:
        return []
    top = validation["top"]
    return [{"label": "All flags", **validation["all"]},
            {"label": f"Top {top['k']:,}", **top}]


@reviewer_required
@require_GET
@never_cache
def audit_status(request: HttpRequest, audit_id: int) -> JsonResponse:
    """{status, failure_reason, progress, hint}: what the report polls while the audit is
    pending (static/leaderboard/status.js)."""
    audit = _audit(request, audit_id)
    return JsonResponse({"id": audit.pk, "status": audit.status,
                         "failure_reason": audit.failure_reason,
                         "progress": (audit.result or {}).get("progress"),
                         "hint": _pending_hint(audit)})


def _pending_hint(audit: Audit) -> str:
    """The status line's words while queued or running ("" otherwise), with the AUL probe's
    epochs as they pass: the page and its status.json say the same."""
    if audit.status == Audit.Status.QUEUED:
        return "waiting for a worker."
    if audit.status != Audit.Status.RUNNING:
        return ""
    progress = (audit.result or {}).get("progress")
    if progress:
        return (f"a worker is running it: epoch {progress['epochs_done']} of "
                f"{progress['epochs_total']}.")
    return "a worker is running it."


def _histogram(audit: Audit) -> dict[str, Any]:
    histogram = selectors_audits.audit_summary(audit)["histogram"]
    if not histogram:
        raise Http404("this audit has no histogram")
    return histogram


@reviewer_required
@require_GET
def audit_histogram_csv(request: HttpRequest, audit_id: int) -> HttpResponse:
    audit = _audit(request, audit_id)
    response = HttpResponse(histogram_csv(_histogram(audit)), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="audit-{audit.pk}-histogram.csv"'
    return response


@reviewer_required
@require_GET
def audit_histogram_svg(request: HttpRequest, audit_id: int) -> HttpResponse:
    """The chart as an SVG file; `?scale=linear` for a linear count axis (default log)."""
    audit = _audit(request, audit_id)
    scale = request.GET.get("scale", "log")
    if scale not in ("log", "linear"):
        raise Http404("scale is log or linear")
    body = '<?xml version="1.0" encoding="UTF-8"?>\n' + histogram_svg(
        _histogram(audit), title=_title(audit), scale=scale)
    response = HttpResponse(body, content_type="image/svg+xml")
    suffix = "" if scale == "log" else "-linear"
    response["Content-Disposition"] = (f'attachment; filename="audit-{audit.pk}-histogram'
                                       f'{suffix}.svg"')
    return response
