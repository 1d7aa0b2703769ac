"""The admin writes only through the services, like the pages and the API: a direct edit of a
row would skip what the service does with it (the leaderboard cache generation above all,
leaderboard/presentation/caching.py). So state fields are read-only here, and each change a
maintainer may make is an action or a `save_model` that calls its service."""

from __future__ import annotations

from typing import Any

from allauth.socialaccount.models import SocialApp
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User
from django.db import models
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from django.template.response import TemplateResponse

from leaderboard.accounts.forms import AdminLoginForm
from leaderboard.accounts.invitations import invitation_create
from leaderboard.accounts.login_throttle import login_lockout_lift
from leaderboard.accounts.models import SignupInvitation
from leaderboard.audits.models import Audit
from leaderboard.catalog.models import Benchmark, ExampleSet, LabelSet, LabelSetVersion
from leaderboard.catalog.services import benchmark_panel_sizes_set
from leaderboard.submissions.control.services import submission_withdraw
from leaderboard.submissions.models import Score, Submission, SubmissionFile
from leaderboard.submissions.services import (
    SubmissionError,
    submission_details_set,
    submission_visibility_set,
)


class ViewOnlyAdmin(admin.ModelAdmin):
    """Shown, never added, edited or deleted here."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ViewOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ExampleSetInline(ViewOnlyInline):
    model = ExampleSet
    fields = ("slug", "name", "size")
    readonly_fields = fields
    show_change_link = True


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    """Benchmarks, example sets and label sets come from their bundles (benchmarks/*.toml and
    uploads: `manage.py load_benchmarks`, `benchmark_add`), which would undo an edit here, and
    their sizes and classes decide every stored score: read-only. The panel sizes are the
    admin's to set."""

    list_display = ("slug", "name", "num_classes", "main_example_set", "created")
    search_fields = ("slug", "name")
    fields = ("slug", "name", "num_classes", "main_example_set", "created",
              "review_panel_size", "ground_truth_panel_size")
    readonly_fields = ("slug", "name", "num_classes", "main_example_set", "created")
    inlines = (ExampleSetInline,)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Benchmark, form: ModelForm,
                   change: bool) -> None:
        benchmark_panel_sizes_set(
            benchmark=obj, review_panel_size=form.cleaned_data["review_panel_size"],
            ground_truth_panel_size=form.cleaned_data["ground_truth_panel_size"])


@admin.register(ExampleSet)
class ExampleSetAdmin(ViewOnlyAdmin):
    list_display = ("slug", "benchmark", "name", "size")
    list_filter = ("benchmark",)
    search_fields = ("slug", "name")


class LabelSetVersionInline(ViewOnlyInline):
    """Versions are listed, never added or edited here: they come from services."""

    model = LabelSetVersion
    fk_name = "label_set"
    fields = ("number", "content_hash", "parent", "author", "created", "published", "note")
    readonly_fields = fields
    show_change_link = True


@admin.register(LabelSet)
class LabelSetAdmin(ViewOnlyAdmin):
    list_display = ("slug", "benchmark", "example_set", "kind", "family", "name")
    list_filter = ("benchmark", "kind", "family")
    search_fields = ("slug", "name")
    inlines = (LabelSetVersionInline,)


@admin.register(LabelSetVersion)
class LabelSetVersionAdmin(ViewOnlyAdmin):
    """Read only: a version is immutable once made (LabelSetVersion.save raises)."""

    list_display = ("label_set", "number", "short_hash", "author", "created", "published")
    list_filter = ("label_set__benchmark", "label_set")
    search_fields = ("content_hash", "note")
    list_select_related = ("label_set", "label_set__benchmark", "author")

    @admin.display(description="content hash")
    def short_hash(self, obj: LabelSetVersion) -> str:
        return obj.content_hash[:12]


class SubmissionFileInline(ViewOnlyInline):
    model = SubmissionFile
    fields = ("example_set", "original_name", "size", "sha256", "file", "compact")
    readonly_fields = fields


class ScoreInline(ViewOnlyInline):
    model = Score
    fields = ("label_set", "label_set_version", "accuracy", "correct", "total", "updated")
    readonly_fields = fields


# What a maintainer may correct in a submission: what the submitter named and linked.
SUBMISSION_DETAILS = ("model_name", "description", "paper_url", "code_url")


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    """Status, claims and scores move only through the workers (conditional updates).
    Visibility moves by the two actions and the names and links by `save_model`, each through
    its service, which bumps the leaderboard generation so the public board follows at once.
    No deletion here: making a submission private takes it off every public page."""

    list_display = ("id", "model_name", "benchmark", "owner", "public", "status", "created")
    list_filter = ("benchmark", "status", "public")
    search_fields = ("model_name", "owner__username")
    list_select_related = ("benchmark", "owner")
    readonly_fields = ("owner", "benchmark", "kind", "public", "status", "failure_code",
                       "failure_reason", "created", "queued_at", "started", "finished_at",
                       "claimed_by", "attempts", "files_removed")
    inlines = (SubmissionFileInline, ScoreInline)
    actions = ("make_public", "make_private", "withdraw")
    # As on the submit form (submissions/forms.py): a link typed without a scheme is https.
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # submissions come through the form, the API or the client

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Submission, form: ModelForm,
                   change: bool) -> None:
        submission_details_set(submission=obj,
                               **{name: form.cleaned_data[name] for name in SUBMISSION_DETAILS})

    def _visibility_set(self, request: HttpRequest, queryset: QuerySet[Submission], *,
                        public: bool) -> None:
        submissions = []
        for submission in queryset:
            try:
                submission_visibility_set(submission=submission, public=public)
            except SubmissionError as exc:  # a withdrawn one stays off the boards
                self.message_user(request, f"#{submission.pk}: {exc.message}", messages.ERROR)
            else:
                submissions.append(submission)
        self.message_user(request, f"{len(submissions)} submission(s) made "
                          f"{'public' if public else 'private'}.", messages.SUCCESS)

    @admin.action(description="Make public (shown on the leaderboard)", permissions=["change"])
    def make_public(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        self._visibility_set(request, queryset, public=True)

    @admin.action(description="Make private (only the submitter sees it)",
                  permissions=["change"])
    def make_private(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        self._visibility_set(request, queryset, public=False)

    @admin.action(description="Withdraw (off every board for good, with a reason)",
                  permissions=["change"])
    def withdraw(self, request: HttpRequest, queryset: QuerySet[Submission]
                 ) -> TemplateResponse | None:
        """A page that asks the reason first (the submitter sees it); then each through
        `submission_withdraw`, which also says who may (a maintainer: docs/hosts/roles.md)."""
        reason = request.POST.get("reason", "").strip()
        if "apply" not in request.POST or not reason:
            return TemplateResponse(request, "admin/leaderboard/submission/withdraw.html", {
                **self.admin_site.each_context(request), "title": "Withdraw submissions",
                "opts": self.model._meta,
                "submissions": list(queryset.select_related("benchmark", "owner")),
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                "missing_reason": "apply" in request.POST})
        withdrawn = 0
        for submission in queryset:
            try:
                submission_withdraw(submission=submission, user=request.user,  # type: ignore[arg-type]
                                    reason=reason)
            except SubmissionError as exc:
                self.message_user(request, f"#{submission.pk}: {exc.message}", messages.ERROR)
            else:
                withdrawn += 1
        self.message_user(request, f"{withdrawn} submission(s) withdrawn.", messages.SUCCESS)
        return None


@admin.register(Audit)
class AuditAdmin(ViewOnlyAdmin):
    """Read-only: audits are started from /audits/ (or the API) and moved by their task."""

    list_display = ("id", "kind", "benchmark", "status", "created_by", "created",
                    "candidates_created")
    list_filter = ("kind", "benchmark", "status")
    list_select_related = ("benchmark", "created_by")


# The admin's login page is held to the failed-login limits, as the site's and the API's are
# (leaderboard/accounts/login_throttle.py; its 429 is leaderboard.accounts.views.admin_login).
admin.site.login_form = AdminLoginForm


def _superusers_only(request: HttpRequest) -> bool:
    """Only superusers enter /admin/ (docs/hosts/teams.md): the admin knows no host team,
    so a team's members, staff or not, act through the site's pages, the API and the commands,
    which ask leaderboard/catalog/teams/permissions.py (docs/hosts/teams.md)."""
    user = request.user
    return bool(user.is_active and user.is_superuser)


admin.site.has_permission = _superusers_only  # type: ignore[method-assign]

admin.site.unregister(User)


@admin.register(User)
class AccountAdmin(UserAdmin):
    """Django's own, with the login lockout's lift (as `manage.py lockout_lift --username`)."""

    actions = ("lift_login_lockout",)

    @admin.action(description="Lift the failed-login lockout", permissions=["change"])
    def lift_login_lockout(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        cleared = sum(login_lockout_lift(username=user.username) for user in queryset)
        self.message_user(request, f"cleared {cleared} failed-login count(s) of "
                          f"{queryset.count()} account(s).", messages.SUCCESS)


# Social sign-in's apps come from the settings alone (leaderboard/accounts/adapters.py): the
# admin's "Social applications" would be rows nothing reads.
admin.site.unregister(SocialApp)


@admin.register(SignupInvitation)
class SignupInvitationAdmin(admin.ModelAdmin):
    """Sign-up invitations (EVALSERVER_SIGNUP_MODE=invitation): a new one gets a random code
    and its maker; who used it, and when, only the sign-up writes."""

    list_display = ("code", "email", "created_by", "created", "used_by", "used_at")
    search_fields = ("code", "email", "used_by__username")
    fields = ("email", "code", "created_by", "created", "used_by", "used_at")
    readonly_fields = ("code", "created_by", "created", "used_by", "used_at")

    def save_model(self, request: HttpRequest, obj: SignupInvitation, form: ModelForm[Any],
                   change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        maker = request.user if isinstance(request.user, User) else None
        made = invitation_create(created_by=maker, email=obj.email)
        obj.pk, obj.code, obj.created_by, obj.created = (made.pk, made.code, made.created_by,
                                                         made.created)
