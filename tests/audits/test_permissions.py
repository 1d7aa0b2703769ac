"""Only the members of a host team read its benchmarks' label audits, and only its hosts start
them (docs/hosts/teams.md): others get 403 (anonymous API callers 401, anonymous visitors of
the pages the login page)."""

from __future__ import annotations

import pytest
from django.test import Client

from leaderboard.audits import services as audits
from leaderboard.audits.inputs import AuditError
from leaderboard.audits.models import Audit
from tests import factories
from tests.api_support import api_client
from tests.audits.conftest import maintainer
from tests.review.conftest import reviewers

pytestmark = pytest.mark.django_db

API = "/api/audits/"
PAGES = ("/audits/", "/audits/{id}/", "/audits/{id}/status.json", "/audits/{id}/histogram.csv",
         "/audits/{id}/histogram.svg")


@pytest.fixture
def audit() -> Audit:
    """An audit row on a toy benchmark (nothing is run)."""
    corrected = factories.toy_label_set(slug="corrected", kind="single", family="corrected")
    return Audit.objects.create(benchmark=corrected.benchmark, example_set=corrected.example_set,
                                label_set=corrected,
                                kind=Audit.Kind.AUL, created_by=maintainer(),
                                status=Audit.Status.DONE,
                                result={"histogram": {"counts": [1, 2], "edges": [0.0, 1.0, 2.0],
                                                      "centres": [0.5, 1.5], "low_curve": None,
                                                      "high_curve": None}})


def _api_calls(audit: Audit) -> list[tuple[str, str]]:
    return [("get", API), ("post", API), ("get", f"{API}{audit.pk}/")]


def test_it_answers_401_to_anonymous_api_callers(audit: Audit) -> None:
    for method, url in _api_calls(audit):
        response = getattr(api_client(), method)(url, {"kind": "aul", "benchmark": "toy"},
                                                 format="json")
        assert response.status_code == 401, url
        assert response.json()["error"]["code"] == "not_authenticated"


def test_it_answers_403_to_a_normal_api_user(audit: Audit) -> None:
    client = api_client(factories.user_create("normal"))
    for method, url in _api_calls(audit):
        response = getattr(client, method)(url, {"kind": "aul", "benchmark": "toy"},
                                           format="json")
        assert response.status_code == 403, url
        assert response.json() == {"error": {
            "code": "permission_denied",
            "message": "only the members of a host team may review (docs/hosts/teams.md)"}}
    assert Audit.objects.count() == 1


@pytest.mark.parametrize("who", ["staff", "group"])
def test_it_lets_staff_and_the_reviewers_group_read_audits(audit: Audit, who: str) -> None:
    user = factories.host_create("boss") if who == "staff" else reviewers(1)[0]
    response = api_client(user).get(API)
    assert response.status_code == 200
    assert [row["id"] for row in response.json()["results"]] == [audit.pk]
    assert response.json()["count"] == 1
    detail = api_client(user).get(f"{API}{audit.pk}/")
    assert detail.status_code == 200
    assert detail.json()["status"] == "done"


def test_it_answers_404_for_an_unknown_audit(audit: Audit) -> None:
    response = api_client(maintainer("boss")).get(f"{API}{audit.pk + 1}/")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found",
                                         "message": f"no audit {audit.pk + 1}"}}


def test_it_redirects_anonymous_visitors_of_the_pages_to_the_login(audit: Audit) -> None:
    for page in PAGES:
        url = page.format(id=audit.pk)
        response = Client().get(url)
        assert response.status_code == 302, url
        assert response["Location"] == f"/login/?next={url}"


def test_it_shows_a_403_page_to_a_normal_user(audit: Audit) -> None:
    client = Client()
    client.force_login(factories.user_create("normal"))
    for page in PAGES:
        response = client.get(page.format(id=audit.pk))
        assert response.status_code == 403, page
        assert (b"Only the members of a host team can start and read its label-error audits."
                in response.content)
    response = client.post("/audits/", {"kind": "aul", "benchmark": "toy",
                                        "max_candidates": 10})
    assert response.status_code == 403
    assert Audit.objects.count() == 1


def test_it_shows_the_audits_link_to_maintainers_only(audit: Audit) -> None:
    client = Client()
    client.force_login(factories.user_create("normal"))
    assert b'href="/audits/"' not in client.get("/").content
    client.force_login(reviewers(1)[0])
    assert b'href="/audits/"' in client.get("/").content


def test_it_refuses_a_normal_user_in_the_service(audit: Audit) -> None:
    with pytest.raises(AuditError) as caught:
        audits.audit_create(author=factories.user_create("normal"), benchmark=audit.benchmark,
                            kind="aul")
    assert (caught.value.code, caught.value.http_status) == ("permission_denied", 403)
    assert caught.value.message == (f"only the hosts of {audit.benchmark.slug}'s host team may "
                                    "start its label audits")


def test_it_documents_the_audit_operations() -> None:
    paths = api_client().get("/api/schema/", {"format": "json"}).json()["paths"]
    assert {m: op["operationId"] for m, op in paths["/api/audits/"].items()} == \
        {"get": "audits_list", "post": "audits_create"}
    assert {m: op["operationId"] for m, op in paths["/api/audits/{audit_id}/"].items()} == \
        {"get": "audits_retrieve"}
