"""Input and output shapes of the notifications API (docs/api.md, 'Notifications and
webhooks')."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from leaderboard.notifications.selectors import EVENTS


class ChannelsSerializer(serializers.Serializer):
    email = serializers.BooleanField()
    webhook = serializers.BooleanField()


class _JsonBoolean(serializers.BooleanField):
    """Only JSON's true and false: DRF's field also takes 0, 1, "yes", "on"..., which the
    schema's boolean does not promise (the view parses JSON only)."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class PreferenceInput(serializers.Serializer):
    event = serializers.ChoiceField(choices=[event.value for event in EVENTS])
    email = _JsonBoolean()
    webhook = _JsonBoolean()


class PreferencesOutput(serializers.Serializer):
    events = serializers.DictField(child=ChannelsSerializer(),
                                   help_text="each event with the channels it is sent on")


class WebhookCreateInput(serializers.Serializer):
    url = serializers.URLField(max_length=500)
    benchmark = serializers.SlugField(required=False, allow_null=True, default=None,
                                      help_text="only this benchmark's events; none: all")


class WebhookOutput(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    benchmark = serializers.CharField(source="benchmark.slug", allow_null=True, default=None)
    created = serializers.DateTimeField()


class WebhookCreatedOutput(WebhookOutput):
    secret = serializers.CharField(help_text="signs every body; shown this once only")


class AttemptOutput(serializers.Serializer):
    at = serializers.DateTimeField()
    status_code = serializers.IntegerField(allow_null=True)
    ok = serializers.BooleanField()
    error = serializers.CharField()


class DeliveryOutput(serializers.Serializer):
    id = serializers.IntegerField()
    event = serializers.CharField()
    channel = serializers.CharField()
    endpoint = serializers.IntegerField(source="endpoint_id", allow_null=True)
    status = serializers.CharField()
    failure_reason = serializers.CharField()
    created = serializers.DateTimeField()
    tries = AttemptOutput(many=True)


class TestEventOutput(serializers.Serializer):
    deliveries = serializers.ListField(child=serializers.IntegerField())
