"""`Client`: the evalserver from Python (a notebook, a training script); the commands use it.

    from evalserver_client import Client
    client = Client()                      # URL and token as the command finds them
    sub = client.submit("cifar10", "resnet50", {"cifar10-test": logits})  # a NumPy array
    sub["scores"]["original"]["accuracy"]

Every method returns the server's JSON (docs/api.md of the server); a submission's gets a
`page` key, its web page. Failures raise `ClientError` subclasses (errors.py).
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .api import Api, FileSource, Notice, Progress
from .checks.submission import SubmissionVerdict, submission_check
from .config import config_read, config_remove, config_write, settings_resolve
from .errors import AuthenticationError, ScoringFailed, UsageError

FINAL = ("scored", "failed", "cancelled")


class Client:
    def __init__(self, url: str | None = None, token: str | None = None, *,
                 timeout: float = 60.0, retries: int = 4, progress: Progress | None = None,
                 notice: Notice | None = None) -> None:
        settings = settings_resolve(url=url, token=token)
        self.url, self.token, self.token_source = (settings.url, settings.token,
                                                   settings.token_source)
        self.api = Api(self.url, self.token, timeout, retries=retries, progress=progress,
                       notice=notice)

    def page_url(self, submission_id: int) -> str:
        """The submission's web page (the server's /submissions/<id>/)."""
        return f"{self.url}/submissions/{submission_id}/"

    def _paged(self, submission: dict[str, Any]) -> dict[str, Any]:
        return {**submission, "page": self.page_url(int(submission["id"]))}

    def _need_token(self) -> None:
        if not self.token:
            raise AuthenticationError(
                "no API token: log in with `evalserver-client login`, or set EVALSERVER_TOKEN "
                "or pass --token")

    # -------------------------------------------------------------- account

    def token_create(self, username: str, password: str) -> str:
        answer = self.api.request("POST", "/api/auth/token/", auth=False,
                                  form={"username": username, "password": password})
        return str(answer["token"])

    def login(self, username: str, password: str) -> dict[str, Any]:
        """Gets the user's token, checks it, and stores it with the URL in the config file."""
        self.token = self.api.token = self.token_create(username, password)
        self.token_source = "config"
        me = self.whoami()
        path = config_write(url=self.url, token=self.token, username=me["username"])
        return {"url": self.url, "username": me["username"], "config": str(path)}

    def logout(self) -> dict[str, Any]:
        """Revokes the token on the server, and forgets the stored one if it is that one."""
        self._need_token()
        self.api.request("DELETE", "/api/auth/token/")
        stored = config_read()
        removed = stored.get("token") == self.token and config_remove()
        return {"url": self.url, "revoked": True, "config_removed": bool(removed)}

    def whoami(self) -> dict[str, Any]:
        self._need_token()
        me: dict[str, Any] = self.api.request("GET", "/api/me/")
        return {**me, "url": self.url, "token_from": self.token_source}

    # -------------------------------------------------------------- reading

    def benchmarks(self) -> list[dict[str, Any]]:
        answer: list[dict[str, Any]] = self.api.request("GET", "/api/benchmarks/")
        return answer

    def benchmark(self, slug: str) -> dict[str, Any]:
        """One benchmark: its classes, example sets (with their sizes) and label sets."""
        answer: dict[str, Any] = self.api.request("GET", f"/api/benchmarks/{quote(slug)}/")
        return answer

    def check(self, benchmark: str, files: Mapping[str, str | os.PathLike[str]]
              ) -> SubmissionVerdict:
        """Checks prediction files (example set slug -> path) as the server would check their
        upload, without uploading them: `.ok`, and per file its `problem` (`code`, `message`,
        `row`, `column`) or its `content`. Reads only the benchmark from the server."""
        return submission_check(self.benchmark(benchmark), files)

    def leaderboard(self, benchmark: str, *, sort: str = "", version: str = "",
                    page_size: int = 1000) -> dict[str, Any]:
        """The whole board: every page read in order (docs/api.md §5.2), sorted by `sort`, by
        default the benchmark's reference label set (the server's default)."""
        query = {**({"sort": sort} if sort else {}), "page_size": str(page_size),
                 **({"version": version} if version else {})}
        path = f"/api/benchmarks/{quote(benchmark)}/leaderboard/"
        board: dict[str, Any] = self.api.request("GET", path, query=query)
        page = 1
        while board.get("next"):
            page += 1
            more = self.api.request("GET", path, query={**query, "page": str(page)})
            board["rows"] += more["rows"]
            board["next"] = more.get("next")
        return board

    def submissions(self, *, limit: int = 50, benchmark: str = "") -> list[dict[str, Any]]:
        """One's own, newest first: up to `limit` (pages of 50, docs/api.md §4)."""
        self._need_token()
        found: list[dict[str, Any]] = []
        page = 1
        while len(found) < limit:
            answer = self.api.request("GET", "/api/submissions/", query={"page": str(page)})
            found += [self._paged(s) for s in answer["results"]
                      if not benchmark or s["benchmark"] == benchmark]
            if not answer.get("next"):
                break
            page += 1
        return found[:limit]

    def status(self, submission_id: int) -> dict[str, Any]:
        return self._paged(self.api.request("GET", f"/api/submissions/{submission_id}/"))

    def wait(self, submission_id: int, timeout: float = 600.0) -> dict[str, Any]:
        """Polls with backoff (0.5 s, growing to 10 s) until scored, failed or cancelled."""
        deadline, delay = time.monotonic() + timeout, 0.5
        while True:
            sub = self.status(submission_id)
            if sub["status"] in FINAL:
                return sub
            if time.monotonic() + delay > deadline:
                raise ScoringFailed(f"still {sub['status']} after {timeout:g} s; check later "
                                    f"with `evalserver-client status {submission_id}`",
                                    body=sub)
            time.sleep(delay)
            delay = min(delay * 1.5, 10.0)

    def compare(self, first: int, second: int, *, page: int | None = None,
                label_set: str = "", page_size: int | None = None) -> dict[str, Any]:
        query = {**({"page": str(page)} if page else {}),
                 **({"label_set": label_set} if label_set else {}),
                 **({"page_size": str(page_size)} if page_size else {})}
        answer: dict[str, Any] = self.api.request(
            "GET", f"/api/submissions/{first}/compare/{second}/", query=query)
        return answer

    # -------------------------------------------------------------- writing

    def submit(self, benchmark: str, model: str, files: Mapping[str, Any], *,
               description: str = "", public: bool = True, paper_url: str = "",
               code_url: str = "", wait: bool = True, timeout: float = 600.0
               ) -> dict[str, Any]:
        """Uploads one predictions file per example set (a path, or a NumPy array sent as .npy),
        or `{"checkpoint": path}`; then waits for the scores unless `wait=False`."""
        self._need_token()
        sources = {slug: _source(slug, value) for slug, value in files.items()}
        fields = {"benchmark": benchmark, "model_name": model, "description": description,
                  "public": "true" if public else "false", "paper_url": paper_url,
                  "code_url": code_url}
        created = self._paged(self.api.upload("/api/submissions/", fields, sources))
        return self.wait(int(created["id"]), timeout) if wait else created

    def _control(self, submission_id: int, action: str,
                 form: dict[str, str] | None = None) -> dict[str, Any]:
        """cancel, rerun, withdraw: one POST each, answered with the submission (§6.5)."""
        self._need_token()
        return self._paged(self.api.request(
            "POST", f"/api/submissions/{submission_id}/{action}/", form=form))

    def cancel(self, submission_id: int) -> dict[str, Any]:
        return self._control(submission_id, "cancel")

    def rerun(self, submission_id: int) -> dict[str, Any]:
        return self._control(submission_id, "rerun")

    def withdraw(self, submission_id: int, reason: str = "") -> dict[str, Any]:
        return self._control(submission_id, "withdraw", {"reason": reason})


def _source(slug: str, value: Any) -> FileSource:
    """A path stays on disk (streamed); anything else is taken for an array and saved as .npy
    in memory. NumPy is imported only then: the client does not depend on it."""
    if isinstance(value, str | os.PathLike):
        path = Path(value).expanduser()
        if not path.is_file() or not os.access(path, os.R_OK):
            raise UsageError(f"{value}: no such file (or not readable)")
        return path
    import numpy as np  # noqa: PLC0415  (optional: only for arrays)

    buffer = io.BytesIO()
    np.save(buffer, np.asarray(value), allow_pickle=False)
    return (f"{slug}.npy", buffer.getvalue())
