"""/client/: the command-line client's newest wheel in EVALSERVER_CLIENT_WHEEL_DIR, offered with
the pip command that installs it from this server, and served by its name (nothing else of the
folder); without a wheel, how the operator builds one."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

pytestmark = pytest.mark.django_db


def _commands(page: str) -> list[str]:
    """The text of the page's command blocks, entities decoded."""
    return [html.unescape(code) for code in
            re.findall(r'<pre class="command"><code>(.*?)</code></pre>', page, flags=re.S)]


def test_it_says_how_the_operator_builds_a_wheel_when_there_is_none(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    settings.EVALSERVER_CLIENT_WHEEL_DIR = tmp_path / "missing"

    response = client.get("/client/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "This server has no wheel of the client to offer yet." in page
    assert _commands(page) == [
        "bash -c 'source scripts/lib.sh && client_wheel_build var/client'",
        "export EVALSERVER_URL=http://testserver\nevalserver-client benchmarks\n"
        "evalserver-client check --benchmark BENCHMARK preds.npy\n"
        "evalserver-client login --username NAME\n"
        "evalserver-client submit --benchmark BENCHMARK --model NAME EXAMPLE_SET=preds.npy"]
    assert "pip install ./clients/python" in page
    assert client.get("/client/evalserver_client-0.2.0-py3-none-any.whl").status_code == 404


def test_it_offers_the_newest_wheel_and_serves_wheels_alone(
    client: Client, loaded: Settings, tmp_path: Path
) -> None:
    loaded.EVALSERVER_CLIENT_WHEEL_DIR = tmp_path
    for name, content in [("evalserver_client-0.9.1-py3-none-any.whl", b"old"),
                          ("evalserver_client-0.10.0-py3-none-any.whl", b"PK new wheel"),
                          ("evalserver_client-0.11.0.tar.gz", b"an sdist"),
                          ("notes.txt", b"private")]:
        (tmp_path / name).write_bytes(content)
    newest = "evalserver_client-0.10.0-py3-none-any.whl"

    page = client.get("/client/").content.decode()
    download = client.get(f"/client/{newest}")

    assert _commands(page) == [
        f"pip install http://testserver/client/{newest}",
        "export EVALSERVER_URL=http://testserver\nevalserver-client benchmarks\n"
        "evalserver-client check --benchmark 20news preds.npy\n"
        "evalserver-client login --username NAME\n"
        "evalserver-client submit --benchmark 20news --model NAME 20news-test=preds.npy"]
    assert "version 0.10.0, 12\xa0bytes" in page
    assert f'<a href="/client/{newest}" download>' in page
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == b"PK new wheel"  # type: ignore[attr-defined]
    assert download["Content-Type"] == "application/octet-stream"
    assert download["Content-Disposition"] == f'attachment; filename="{newest}"'
    for name in ("evalserver_client-0.11.0.tar.gz", "notes.txt", "..%2Fnotes.txt",
                 "evalserver_client-0.8.0-py3-none-any.whl"):
        assert client.get(f"/client/{name}").status_code == 404, name
    assert client.post(f"/client/{newest}").status_code == 405
