"""The home page: every benchmark with its modality, test sets and a summary of its board,
searched by name (`?q=`) and filtered by modality (`?modality=`) without a script; the page's
script (home.js) filters the same way as one types."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from leaderboard.presentation.selectors import home_listing_get

# A query longer than any benchmark's name and slug matches nothing; it is cut, not refused.
QUERY_MAX_LENGTH = 200


def home(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "")[:QUERY_MAX_LENGTH]
    modality = request.GET.get("modality", "")[:QUERY_MAX_LENGTH]
    listing = home_listing_get(query=query, modality=modality)
    return render(request, "leaderboard/home.html", {"listing": listing})
