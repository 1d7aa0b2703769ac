"""The operator's commands and host teams (docs/hosts/teams.md): `benchmark_add --team` gives
a new benchmark to a team (the site team by default) and refuses an update of another team's;
`reveal_hidden --by` must name a host of the benchmark's team."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import Benchmark, HiddenPhase
from leaderboard.catalog.teams.selectors import host_team_site_get
from tests import factories
from tests.workers.scoring.bundles.bundle_files import data_files, manifest, npy_bytes, write_bundle

pytestmark = pytest.mark.django_db


def _add(path: Path, *options: str) -> None:
    call_command("benchmark_add", str(path), *options, stdout=io.StringIO(),
                 stderr=io.StringIO())


def test_it_adds_a_benchmark_for_the_team_named_and_refuses_another_teams_update(
    catalog_settings: Settings, tmp_path: Path,
) -> None:
    lab = factories.team_create("lab")
    _add(write_bundle(tmp_path / "toy", manifest()), "--team", "lab")
    assert Benchmark.objects.get(slug="toy").team == lab

    renamed = {**manifest(), "name": "Renamed"}
    with pytest.raises(CommandError, match=r"^benchmark 'toy' belongs to another host team: a "
                                           r"bundle can add or update only its own team's "
                                           r"benchmarks$"):
        _add(write_bundle(tmp_path / "renamed", renamed), "--update")  # the site team's
    assert Benchmark.objects.get(slug="toy").name != "Renamed"
    _add(write_bundle(tmp_path / "lab-renamed", renamed), "--update", "--team", "lab")
    assert Benchmark.objects.get(slug="toy").name == "Renamed"

    with pytest.raises(CommandError, match=r"^no host team 'nowhere'$"):
        _add(write_bundle(tmp_path / "x", manifest()), "--team", "nowhere")


def test_it_gives_a_benchmark_added_without_a_team_to_the_site_team(
    catalog_settings: Settings, tmp_path: Path,
) -> None:
    _add(write_bundle(tmp_path / "toy", manifest()))
    assert Benchmark.objects.get(slug="toy").team == host_team_site_get()


def test_it_reveals_only_for_a_host_of_the_benchmarks_team(
    catalog_settings: Settings, tmp_path: Path,
) -> None:
    document = manifest()
    document["label_sets"].append({"slug": "secret", "kind": "single", "name": "Secret",
                                   "labels": "secret.npy", "hidden": True, "release": "exact",
                                   "split": {"private": "private.json"}})
    files = {**data_files(), "secret.npy": npy_bytes(np.array([0, 1, 2, 0, 1, 2])),
             "private.json": json.dumps([1, 4]).encode()}
    _add(write_bundle(tmp_path / "bundle", document, files))
    factories.host_create("lab-host", team=factories.team_create("lab"))
    factories.reviewer_create("site-reviewer")
    for username in ("lab-host", "site-reviewer"):
        with pytest.raises(CommandError, match=rf"^'{username}' is not a host of toy's team "
                                               r"'site'$"):
            call_command("reveal_hidden", "toy", "secret", "--by", username,
                         stdout=io.StringIO())
    assert HiddenPhase.objects.get().revealed is None
    factories.host_create("site-host")
    out = io.StringIO()
    call_command("reveal_hidden", "toy", "secret", "--by", "site-host", stdout=out)
    assert out.getvalue() == "toy/secret phase 1: revealed\n"
    assert HiddenPhase.objects.values_list("revealed_by__username", flat=True).get() == \
        "site-host"
