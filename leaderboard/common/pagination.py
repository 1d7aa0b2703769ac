"""The API's one pagination: `?page=<n>`, n a positive integer (docs/api.md §4)."""

from __future__ import annotations

from rest_framework.pagination import PageNumberPagination


class IntegerPageNumberPagination(PageNumberPagination):
    """DRF's page numbers without `page=last` (the last page): the schema documents `page` as
    an integer, so `last` is 404 `not_found` like any other page that is not one."""

    last_page_strings = ()
