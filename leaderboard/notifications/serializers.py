"""Input and output shapes of the notifications API (docs/api.md, 'Notifications and
webhooks')."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.fields import empty

from leaderboard.notifications.selectors import EVENTS


class ChannelsSerializer(serializers.Serializer):
    email = serializers.BooleanField()
    webhook = serializers.BooleanField()


class PreferenceInput(serializers.Serializer):
    event = serializers.ChoiceField(choices=[event.value for event in EVENTS])
    email = serializers.BooleanField()
    webhook = serializers.BooleanField()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A form body without a channel is an error, not false (DRF's HTML-form default).
        for name in ("email", "webhook"):
            self.fields[name].default_empty_html = empty


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
