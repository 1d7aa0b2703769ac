"""Who may open a page: one decorator for the maintainer pages (review, bundles), which
sends anonymous visitors to log in and answers everyone else without the role with a 403
page that says who may."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import render

# a page, or a file a page links (a FileResponse)
View = Callable[..., HttpResponseBase]


def role_required(
    allowed: Callable[[Any], bool], *, title: str, message: str
) -> Callable[[View], View]:
    """Log in first (redirect), then only users for whom `allowed(user)` holds; everyone else
    gets leaderboard/forbidden.html with `title` and `message` (status 403)."""

    def decorate(view: View) -> View:
        @login_required
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            user: AbstractBaseUser | AnonymousUser = request.user
            if not allowed(user):
                return render(request, "leaderboard/forbidden.html",
                              {"title": title, "message": message}, status=403)
            return view(request, *args, **kwargs)

        return wrapped

    return decorate
