"""The hosts' pages that upload a bundle and show its outcome: only a team's hosts see them; a
bad file is refused on the form with nothing stored; a refused bundle's page names the code,
file and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import BundleUpload
from tests import factories
from tests.catalog.toy_bundle import process, toy_zip

pytestmark = pytest.mark.django_db


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_it_shows_the_pages_to_hosts_only(tmp_path: Path) -> None:
    owner = factories.host_create("boss")
    upload = BundleUpload.objects.create(original_name="toy3.zip", size=10, uploaded_by=owner,
                                         bundle="bundles/x/toy3.zip")
    pages = ("/bundles/", f"/bundles/{upload.pk}/", f"/bundles/{upload.pk}/status.json")
    researcher = signed_in(factories.user_create("researcher"))
    for url in pages:
        assert Client().get(url).url == f"/login/?next={url}"
        forbidden = researcher.get(url)
        assert forbidden.status_code == 403
        assert (b"Only the hosts and admins of a host team can add or update its benchmarks."
                in forbidden.content)
    staff = signed_in(owner)
    listing = staff.get("/bundles/")
    assert listing.status_code == 200
    assert f'href="/bundles/{upload.pk}/"'.encode() in listing.content
    assert staff.get(f"/bundles/{upload.pk}/status.json").json() == {
        "id": upload.pk, "status": "queued", "hint": "waiting for a worker."}
    assert staff.get("/bundles/999/").status_code == 404


def test_it_refuses_a_file_that_is_not_a_zip_on_the_form(
    catalog_settings: Settings, tmp_path: Path,
) -> None:
    staff = signed_in(factories.host_create("boss"))
    path = tmp_path / "bundle.tar"
    path.write_bytes(b"PK\x03\x04")
    with open(path, "rb") as handle:
        response = staff.post("/bundles/", {"bundle": handle})

    assert response.status_code == 400
    assert (b"&#x27;bundle.tar&#x27;: a bundle is uploaded as a .zip archive holding its "
            b"manifest and files") in response.content
    assert BundleUpload.objects.count() == 0


def test_it_uploads_from_the_form_and_shows_the_refusal(
    catalog_settings: Settings, tmp_path: Path,
) -> None:
    staff = signed_in(factories.host_create("boss"))
    archive = toy_zip(tmp_path, extra={"toy3/../evil.txt": b"outside"})
    with open(archive, "rb") as handle:
        response = staff.post("/bundles/", {"bundle": handle})
    upload = BundleUpload.objects.get()
    assert response.status_code == 302
    assert response.url == f"/bundles/{upload.pk}/"
    pending = staff.get(response.url).content.decode()
    assert f'data-poll-url="/bundles/{upload.pk}/status.json"' in pending

    assert process(upload.pk) == "failed"
    page = staff.get(response.url).content.decode()
    assert '<code id="error-code">zip_unsafe_entry</code>' in page
    assert '<code id="error-file">toy3/../evil.txt</code>' in page
    assert "a `..` part leads out of the bundle" in page
    assert "data-poll-url" not in page


def test_it_stops_a_bundle_over_the_upload_cap_on_the_form(
    catalog_settings: Settings, tmp_path: Path,
) -> None:
    staff = signed_in(factories.host_create("boss"))
    archive = toy_zip(tmp_path)
    catalog_settings.EVALSERVER_MAX_UPLOAD_BYTES = 100
    with open(archive, "rb") as handle:
        response = staff.post("/bundles/", {"bundle": handle})

    assert response.status_code == 413
    assert (b"the bundle is larger than the upload limit of 100 bytes: nothing was stored"
            in response.content)
    assert BundleUpload.objects.count() == 0
