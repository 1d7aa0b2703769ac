"""Input and output of the participation operations (docs/api.md, "Participation")."""

from __future__ import annotations

from rest_framework import serializers

from leaderboard.submissions.participation.models import ParticipationMode, ParticipationRequest

Status = ParticipationRequest.Status


class ParticipationRulesInput(serializers.Serializer):
    mode = serializers.ChoiceField(choices=ParticipationMode.choices,
                                   help_text="open | approval")
    require_verified_email = serializers.BooleanField()
    terms = serializers.CharField(required=False, allow_blank=True, default="",
                                  max_length=20000, trim_whitespace=True,
                                  help_text="the terms participants accept (empty: none)")


class ParticipationYouOutput(serializers.Serializer):
    """The caller's standing (null for an anonymous caller)."""

    may_submit = serializers.BooleanField()
    refusal_code = serializers.CharField(
        allow_null=True, help_text="why not: participation_required, email_unverified or "
                                   "terms_not_accepted; null when the caller may submit")
    is_host = serializers.BooleanField()
    request_status = serializers.CharField(allow_null=True,
                                           help_text="pending | approved | refused, or null")
    email_verified = serializers.BooleanField()
    terms_accepted_at = serializers.DateTimeField(
        allow_null=True, help_text="when the caller accepted the current terms")


class ParticipationRulesOutput(serializers.Serializer):
    benchmark = serializers.CharField()
    mode = serializers.CharField(help_text="open | approval")
    require_verified_email = serializers.BooleanField()
    terms = serializers.CharField()
    terms_sha256 = serializers.CharField(
        help_text="sha256 of the terms (hex; empty without terms): accept them by it")
    defaults = serializers.BooleanField(help_text="true while the hosts never set the rules")
    you = ParticipationYouOutput(allow_null=True)


class ParticipationRequestInput(serializers.Serializer):
    message = serializers.CharField(required=False, allow_blank=True, default="",
                                    max_length=2000, help_text="a word to the hosts")


class ParticipationRequestQueryInput(serializers.Serializer):
    status = serializers.ChoiceField(choices=Status.choices, required=False,
                                     help_text="pending | approved | refused")


class ParticipationRequestOutput(serializers.Serializer):
    id = serializers.IntegerField()
    benchmark = serializers.CharField(source="benchmark.slug")
    user = serializers.CharField(source="user.username")
    status = serializers.CharField(help_text="pending | approved | refused")
    message = serializers.CharField()
    note = serializers.CharField(help_text="the hosts' note on their decision")
    created = serializers.DateTimeField()
    decided_by = serializers.SerializerMethodField()
    decided_at = serializers.DateTimeField(allow_null=True)

    def get_decided_by(self, request: ParticipationRequest) -> str | None:
        return request.decided_by.username if request.decided_by is not None else None


class ParticipationDecisionInput(serializers.Serializer):
    decision = serializers.ChoiceField(choices=(("approve", "approve"), ("refuse", "refuse")),
                                       help_text="approve | refuse")
    note = serializers.CharField(required=False, allow_blank=True, default="",
                                 max_length=2000, help_text="shown to the user")


class TermsAcceptanceInput(serializers.Serializer):
    terms_sha256 = serializers.RegexField(
        r"^[0-9a-f]{64}$", help_text="the `terms_sha256` of the rules the caller read")


class TermsAcceptanceOutput(serializers.Serializer):
    benchmark = serializers.CharField(source="benchmark.slug")
    terms_sha256 = serializers.CharField()
    accepted_at = serializers.DateTimeField()

