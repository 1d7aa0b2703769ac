"""The temporary files of uploads that a killed web process left behind are removed by the
hourly beat task once no request can still be writing them; nothing else in the folder is."""

from __future__ import annotations

import os
import time
from pathlib import Path

from pytest_django.fixtures import Settings

from leaderboard.tasks.cpu import remove_stray_upload_files


def _file(folder: Path, name: str, *, age: float) -> Path:
    path = folder / name
    path.write_bytes(b"\0" * 100)
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_it_removes_an_old_stray_upload_file_and_keeps_a_fresh_one(settings: Settings,
                                                                   tmp_path: Path) -> None:
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    settings.EVALSERVER_UPLOAD_DEADLINE = 3600
    stray_age = 3600 + 2 * 3600  # the deadline, plus two hours for storing a received file
    _file(tmp_path, "tmpa1b2c3.upload.npy", age=stray_age + 60)  # its web process was killed
    _file(tmp_path, "tmpd4e5f6.upload.json", age=stray_age - 60)  # may still be written
    _file(tmp_path, "notes.txt", age=10 * stray_age)  # not an upload's
    (tmp_path / "tmpdir.upload").mkdir()
    os.utime(tmp_path / "tmpdir.upload", (0, 0))

    assert remove_stray_upload_files.apply().get() == ["tmpa1b2c3.upload.npy"]

    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "notes.txt", "tmpd4e5f6.upload.json", "tmpdir.upload"]
    assert remove_stray_upload_files.apply().get() == []


def test_it_removes_nothing_when_the_folder_is_gone(settings: Settings, tmp_path: Path) -> None:
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "removed")

    assert remove_stray_upload_files.apply().get() == []
