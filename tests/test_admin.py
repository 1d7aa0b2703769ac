"""The admin shows all four catalog models; versions are view-only there; every change it
makes goes through a service, so the public leaderboard follows at once."""

from __future__ import annotations

import uuid
from html.parser import HTMLParser
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from leaderboard.catalog.models import Benchmark, LabelSet, LabelSetVersion
from leaderboard.catalog.services import label_set_version_create
from leaderboard.submissions.models import Submission
from tests import factories
from tests.helpers import builtin_label_set_sync
from tests.pages import leaderboard_table
from workers.scoring.bundles import builtin_bundle

pytestmark = pytest.mark.django_db


@pytest.fixture
def version() -> LabelSetVersion:
    label_set = builtin_label_set_sync("mnist", "original")
    return label_set_version_create(label_set=label_set, content_hash="d" * 64, summary={})


@pytest.mark.parametrize("model", ["benchmark", "exampleset", "labelset", "labelsetversion"])
def test_it_lists_each_model(admin_client: Client, version: LabelSetVersion, model: str) -> None:
    response = admin_client.get(reverse(f"admin:leaderboard_{model}_changelist"))

    assert response.status_code == 200
    assert "mnist" in response.content.decode()


def test_it_shows_versions_read_only(admin_client: Client, version: LabelSetVersion) -> None:
    change_url = reverse("admin:leaderboard_labelsetversion_change", args=[version.pk])

    page = admin_client.get(change_url)
    post = admin_client.post(change_url, {"note": "edited"})
    add = admin_client.get(reverse("admin:leaderboard_labelsetversion_add"))

    assert page.status_code == 200
    assert 'name="note"' not in page.content.decode()  # shown, not editable
    assert post.status_code == 403
    assert add.status_code == 403
    assert LabelSetVersion.objects.get(pk=version.pk).note == ""


# -- changes go through the services, and the public board follows at once ------------------

BOARD_PAGE = "/benchmarks/cifar10/"
BOARD_API = "/api/benchmarks/cifar10/leaderboard/"
SUBMISSIONS = "/admin/leaderboard/submission/"


class _FormFields(HTMLParser):
    """What a browser posts from the page's form: inputs (checked boxes only), textareas and
    the selected option of each select."""

    def __init__(self) -> None:
        super().__init__()
        self.data: dict[str, str] = {}
        self._textarea: str | None = None
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        name = a.get("name", "")
        if tag == "input" and name and a.get("type") not in ("submit", "button"):
            if a.get("type") != "checkbox" or "checked" in a:
                self.data[name] = a.get("value", "")
        elif tag == "textarea" and name:
            self._textarea, self.data[name] = name, ""
        elif tag == "select" and name:
            self._select = name
        elif tag == "option" and self._select is not None and "selected" in a:
            self.data[self._select] = a.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea":
            self._textarea = None
        elif tag == "select":
            self._select = None

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self.data[self._textarea] += data


def form_fields(html: str) -> dict[str, str]:
    parser = _FormFields()
    parser.feed(html)
    return parser.data


def staff_client(*permissions: str, superuser: bool = True) -> Client:
    """A signed-in client of a staff account with `permissions`: a superuser (the only kind
    the admin lets in: docs/hosts/teams.md), or, with `superuser` False, staff only."""
    user = factories.user_create("moderator", staff=True)
    User.objects.filter(pk=user.pk).update(is_superuser=superuser)
    user.user_permissions.set(Permission.objects.filter(
        content_type__app_label="leaderboard", codename__in=permissions))
    client = Client()
    client.force_login(user)
    return client


def board_rows(client: Client) -> tuple[list[tuple[str, str]], list[tuple[str, int]]]:
    """(model, rank) on the public page and in the public API, sorted by original labels."""
    page = leaderboard_table(client.get(BOARD_PAGE).content.decode())[1]
    api = APIClient().get(BOARD_API).json()["rows"]
    return ([(row.model, row.rank) for row in page],
            [(row["model_name"], row["ranks"]["original"]) for row in api])


def test_it_changes_visibility_in_the_admin_and_the_public_board_follows(
    scored_models: dict[str, Submission]
) -> None:
    client = staff_client("view_submission", "change_submission")
    vgg = scored_models["vgg16_keras"]
    everyone = ([("vgg16_keras", "1"), ("resnet_basic_110", "2"),
                 ("resnet_preact_basic_110", "3")],
                [("vgg16_keras", 1), ("resnet_basic_110", 2), ("resnet_preact_basic_110", 3)])
    assert board_rows(client) == everyone  # both are cached now

    hidden = client.post(SUBMISSIONS, {"action": "make_private", "_selected_action": [vgg.pk]})

    assert hidden.status_code == 302
    assert Submission.objects.get(pk=vgg.pk).public is False
    assert board_rows(client) == (
        [("resnet_basic_110", "1"), ("resnet_preact_basic_110", "2")],
        [("resnet_basic_110", 1), ("resnet_preact_basic_110", 2)])
    messages = [str(m) for m in get_messages(hidden.wsgi_request)]
    assert messages == ["1 submission(s) made private."]

    shown = client.post(SUBMISSIONS, {"action": "make_public",
                                      "_selected_action": [vgg.pk]})

    assert shown.status_code == 302
    assert board_rows(client) == everyone


def test_it_renames_in_the_admin_and_the_public_board_follows(
    scored_models: dict[str, Submission]
) -> None:
    client = staff_client("view_submission", "change_submission")
    vgg = scored_models["vgg16_keras"]
    change_url = reverse("admin:leaderboard_submission_change", args=[vgg.pk])
    assert board_rows(client)[1][0] == ("vgg16_keras", 1)  # cached now
    page = client.get(change_url).content.decode()
    data = form_fields(page)
    assert 'name="public"' not in page and 'name="status"' not in page

    data.update(model_name="VGG-16 (Keras)", paper_url="https://arxiv.org/abs/1409.1556",
                public="", status="scored")
    saved = client.post(change_url, data)

    assert saved.status_code == 302
    assert board_rows(client) == (
        [("VGG-16 (Keras)", "1"), ("resnet_basic_110", "2"), ("resnet_preact_basic_110", "3")],
        [("VGG-16 (Keras)", 1), ("resnet_basic_110", 2), ("resnet_preact_basic_110", 3)])
    after = Submission.objects.get(pk=vgg.pk)
    assert (after.model_name, after.paper_url, after.public) == (
        "VGG-16 (Keras)", "https://arxiv.org/abs/1409.1556", True)


def test_it_lets_no_one_but_superusers_into_the_admin(
    scored_models: dict[str, Submission]
) -> None:
    """Staff with the admin's own permissions, and a site-team host, are sent to the admin's
    login: no benchmark right comes from being staff (docs/hosts/teams.md)."""
    vgg = scored_models["vgg16_keras"]
    host = Client()
    host.force_login(factories.host_create("site-host"))
    for client in (staff_client("view_submission", "change_submission", superuser=False),
                   host):
        listing = client.get(SUBMISSIONS)
        refused = client.post(SUBMISSIONS, {"action": "make_private",
                                            "_selected_action": [vgg.pk]})
        for answer in (listing, refused):
            assert (answer.status_code, answer["Location"]) == (
                302, f"/admin/login/?next={SUBMISSIONS}")
    assert Submission.objects.get(pk=vgg.pk).public is True
    assert board_rows(Client())[1][0] == ("vgg16_keras", 1)


def test_it_withdraws_in_the_admin_with_a_reason_and_the_public_board_follows(
    scored_models: dict[str, Submission]
) -> None:
    client = staff_client("view_submission", "change_submission")
    vgg = scored_models["vgg16_keras"]
    assert board_rows(client)[1][0] == ("vgg16_keras", 1)  # cached now
    chosen = {"action": "withdraw", "_selected_action": [vgg.pk]}

    asked = client.post(SUBMISSIONS, chosen)
    no_reason = client.post(SUBMISSIONS, {**chosen, "apply": "Withdraw", "reason": "  "})
    assert Submission.objects.get(pk=vgg.pk).withdrawn is None
    done = client.post(SUBMISSIONS, {**chosen, "apply": "Withdraw",
                                     "reason": "trained on the test set"})

    assert asked.status_code == 200 and 'name="reason"' in asked.content.decode()
    assert f"#{vgg.pk} vgg16_keras" in asked.content.decode()
    assert "Say why" not in asked.content.decode()
    assert no_reason.status_code == 200 and "Say why" in no_reason.content.decode()
    assert done.status_code == 302
    after = Submission.objects.get(pk=vgg.pk)
    assert (after.withdrawn is not None, after.withdrawn_reason, after.withdrawn_by.username,
            after.public) == (True, "trained on the test set", "moderator", False)
    assert [str(m) for m in get_messages(done.wsgi_request)] == ["1 submission(s) withdrawn."]
    assert board_rows(client) == (
        [("resnet_basic_110", "1"), ("resnet_preact_basic_110", "2")],
        [("resnet_basic_110", 1), ("resnet_preact_basic_110", 2)])

    again = client.post(SUBMISSIONS, {**chosen, "apply": "Withdraw", "reason": "again"})
    assert [str(m) for m in get_messages(again.wsgi_request)] == [
        f"#{vgg.pk}: this submission is already withdrawn", "0 submission(s) withdrawn."]


def test_it_lifts_a_login_lockout_in_the_admin(admin_client: Client, settings: Any) -> None:
    settings.EVALSERVER_LOGIN_FAILURES_PER_USER_ADDRESS = 2
    settings.EVALSERVER_LOGIN_WINDOW_SECONDS = 600
    user = factories.user_create(f"locked-{uuid.uuid4().hex[:8]}")
    api = APIClient(REMOTE_ADDR=f"203.0.113.{uuid.uuid4().int % 250}")

    def token(password: str) -> int:
        return api.post("/api/auth/token/", {"username": user.username,
                                             "password": password}, format="json").status_code

    assert [token("wrong"), token("wrong"), token(factories.PASSWORD)] == [400, 400, 429]
    lifted = admin_client.post(reverse("admin:auth_user_changelist"),
                               {"action": "lift_login_lockout", "_selected_action": [user.pk]})

    assert lifted.status_code == 302
    # the username's count and that of its pair with the address
    assert [str(m) for m in get_messages(lifted.wsgi_request)] == [
        "cleared 2 failed-login count(s) of 1 account(s)."]
    assert token(factories.PASSWORD) == 200


def test_it_offers_no_deletion_and_no_direct_edit_of_state(
    admin_client: Client, scored_models: dict[str, Submission]
) -> None:
    vgg = scored_models["vgg16_keras"]
    benchmark = Benchmark.objects.get(slug="cifar10")
    listing = admin_client.get(SUBMISSIONS).content.decode()
    delete = admin_client.post(reverse("admin:leaderboard_submission_delete", args=[vgg.pk]),
                               {"post": "yes"})
    benchmark_page = admin_client.get(
        reverse("admin:leaderboard_benchmark_change", args=[benchmark.pk])).content.decode()
    label_set = LabelSet.objects.get(benchmark=benchmark, slug="original")
    label_set_post = admin_client.post(
        reverse("admin:leaderboard_labelset_change", args=[label_set.pk]), {"name": "edited"})

    assert [v for v in ("delete_selected", "make_public", "make_private", "withdraw")
            if f'value="{v}"' in listing] == ["make_public", "make_private", "withdraw"]
    assert delete.status_code == 403
    assert Submission.objects.filter(pk=vgg.pk).exists()
    assert [name for name in ("name", "num_classes", "review_panel_size",
                              "ground_truth_panel_size", "example_sets-0-size")
            if f'name="{name}"' in benchmark_page] == ["review_panel_size",
                                                       "ground_truth_panel_size"]
    assert label_set_post.status_code == 403
    assert LabelSet.objects.get(pk=label_set.pk).name == label_set.name


def test_it_sets_the_panel_sizes_through_the_service(admin_client: Client,
                                                     version: LabelSetVersion) -> None:
    benchmark = version.label_set.benchmark
    change_url = reverse("admin:leaderboard_benchmark_change", args=[benchmark.pk])
    data = form_fields(admin_client.get(change_url).content.decode())

    data.update(review_panel_size="4", ground_truth_panel_size="7", name="renamed")
    saved = admin_client.post(change_url, data)

    assert saved.status_code == 302
    after = Benchmark.objects.get(pk=benchmark.pk)
    assert (after.review_panel_size, after.ground_truth_panel_size, after.name) == (
        4, 7, builtin_bundle("mnist").name)
