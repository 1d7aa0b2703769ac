"""The client's table of one's submissions shows when each was made to the minute, in UTC, as
people read it: not the API's ISO 8601 with microseconds and offset."""

from __future__ import annotations

import pytest

from evalserver_client.output import minutes, submissions_table


@pytest.mark.parametrize(("stamp", "shown"), [
    ("2026-11-29T12:40:31.123456Z", "2026-11-29 12:40 UTC"),
    ("2026-11-29T12:40:59.999999+00:00", "2026-11-29 12:40 UTC"),
    ("2026-11-29T00:10:00+01:00", "2026-11-28 23:10 UTC"),  # another offset, read in UTC
    ("2026-11-29T12:40:31", "2026-11-29 12:40"),  # no offset: no zone is claimed
    ("yesterday", "yesterday"),  # not a time: as it came
    (None, ""),
])
def test_it_shows_an_api_time_to_the_minute_in_utc(stamp: str | None, shown: str) -> None:
    assert minutes(stamp) == shown


def test_it_lists_submissions_with_their_creation_to_the_minute() -> None:
    rows = [{"id": 7, "benchmark": "cifar10", "model_name": "resnet", "status": "scored",
             "withdrawn": None, "scores": {"original": {"accuracy": 0.9312}},
             "created": "2026-11-29T12:40:31.123456Z"}]
    assert submissions_table(rows).splitlines() == [
        "id  benchmark  model   status  original               created",
        "7   cifar10    resnet  scored    93.12%  2026-11-29 12:40 UTC"]
