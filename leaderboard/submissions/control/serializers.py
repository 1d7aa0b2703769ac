"""Input of the withdraw operation (cancel and re-run take none; all answer with the
submission, leaderboard/submissions/serializers.py `SubmissionDetailOutput`)."""

from __future__ import annotations

from rest_framework import serializers


class SubmissionWithdrawInput(serializers.Serializer):
    reason = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=2000,
        help_text="why (required of a maintainer withdrawing someone else's submission: its "
                  "owner sees it)")
