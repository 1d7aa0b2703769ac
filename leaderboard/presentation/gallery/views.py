"""A submission's mistake gallery: its misses on ImageNet-M and every example of the
correctable set C of the corrected labels, as cards (leaderboard/presentation/gallery/selectors.py).

`?set=imagenet-m|corrected` picks the section (default: the first the submission has),
`?match=original|corrected|neither` filters C, `?page=N` pages (PAGE_SIZE cards). Visible to
whoever may see the submission's page; anything else, or an unknown parameter, answers 404.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import InvalidPage, Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import urlencode

from leaderboard.presentation.gallery import selectors as selectors_gallery
from leaderboard.submissions.models import Submission
from leaderboard.submissions.selectors import submission_visible_get


def _links(section: str, match: str | None, page: Any) -> dict[str, Any]:
    def url(number: int) -> str:
        query = {"set": section, **({"match": match} if match else {})}
        return "?" + urlencode({**query, "page": str(number)})

    paginator = page.paginator
    return {
        "first": page.start_index(), "last": page.end_index(), "total": paginator.count,
        "previous": url(page.previous_page_number()) if page.has_previous() else None,
        "next": url(page.next_page_number()) if page.has_next() else None,
        "numbers": [{"number": n, "url": url(n), "current": n == page.number}
                    for n in paginator.page_range] if paginator.num_pages > 1 else [],
    }


def submission_mistakes(request: HttpRequest, submission_id: int) -> HttpResponse:
    try:
        submission = submission_visible_get(submission_id=submission_id,
                                                      user=request.user)
    except Submission.DoesNotExist:
        raise Http404("no such submission") from None
    sections = selectors_gallery.submission_gallery(submission=submission)
    chosen = request.GET.get("set") or next(iter(sections), "")
    match = request.GET.get("match") or None
    raw_page = request.GET.get("page") or "1"
    section = sections.get(chosen)
    if (sections and section is None) or (match is not None and (
            section is None or section.kind != selectors_gallery.CORRECTABLE
            or match not in selectors_gallery.MATCHES)):
        raise Http404("no such gallery")
    context: dict[str, Any] = {"submission": submission, "sections": list(sections.values()),
                               "kinds": [s.kind for s in sections.values()],
                               "chosen": chosen, "match": match,
                               "matches": selectors_gallery.MATCHES}
    if section is not None:
        paginator = Paginator(selectors_gallery.section_rows(section, match),
                              selectors_gallery.PAGE_SIZE, allow_empty_first_page=True)
        if not raw_page.isdigit():
            raise Http404("no such page")
        try:
            page = paginator.page(int(raw_page))
        except InvalidPage:
            raise Http404("no such page") from None
        context.update(section=section, pages=_links(chosen, match, page),
                       cards=selectors_gallery.mistake_cards(
                           benchmark=submission.benchmark, section=section,
                           rows=list(page.object_list)))
    return render(request, "leaderboard/submission_gallery.html", context)
