"""Input and output of the hidden phases' API (docs/api.md, hidden label sets)."""

from __future__ import annotations

from rest_framework import serializers

from leaderboard.catalog.models import HiddenPhase


class HiddenPhaseOutput(serializers.Serializer):
    label_set = serializers.CharField(source="label_set.slug")
    phase = serializers.IntegerField(source="number")
    opened = serializers.DateTimeField()
    revealed = serializers.DateTimeField(allow_null=True, help_text="null until revealed")
    revealed_by = serializers.CharField(source="revealed_by.username", allow_null=True,
                                        default=None)
    split = serializers.SerializerMethodField(help_text="whether it has a private part")

    def get_split(self, phase: HiddenPhase) -> bool:
        return phase.private_mask is not None


class HiddenPhaseOpenInput(serializers.Serializer):
    seed = serializers.IntegerField(min_value=0, max_value=2**63 - 1,
                                    help_text="draws the new phase's private part")
