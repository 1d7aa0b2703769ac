"""`/api/notifications/...`: the caller's notification preferences, webhook endpoints,
delivery log, and a test event (docs/api.md, 'Notifications and webhooks')."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.parsers import JSONParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.common.api import error_responses, signed_in_user
from leaderboard.notifications import serializers as io
from leaderboard.notifications.selectors import (
    notification_deliveries_list,
    notification_preferences_get,
    webhook_endpoints_list,
)
from leaderboard.notifications.services import (
    notification_preference_update,
    webhook_endpoint_create,
    webhook_endpoint_delete,
    webhook_test_event_send,
)


class PreferencesView(APIView):
    permission_classes = [IsAuthenticated]
    # JSON only: a form's "0" or "on" is not the boolean the schema promises
    parser_classes = [JSONParser]

    @extend_schema(operation_id="notification_preferences_get",
                   summary="The events the caller is told of, by channel",
                   responses={200: io.PreferencesOutput, **error_responses(401)})
    def get(self, request: Request) -> Response:
        events = notification_preferences_get(user=signed_in_user(request))
        return Response(io.PreferencesOutput({"events": events}).data)

    @extend_schema(operation_id="notification_preference_update",
                   summary="Opt into (or out of) one event on each channel",
                   request=io.PreferenceInput,
                   responses={200: io.PreferencesOutput, **error_responses(400, 401)})
    def put(self, request: Request) -> Response:
        form = io.PreferenceInput(data=request.data)
        form.is_valid(raise_exception=True)
        user = signed_in_user(request)
        notification_preference_update(user=user, **form.validated_data)
        events = notification_preferences_get(user=user)
        return Response(io.PreferencesOutput({"events": events}).data)


class WebhookListCreateView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="webhook_list", summary="The caller's webhook endpoints",
                   responses={200: io.WebhookOutput(many=True), **error_responses(401)})
    def get(self, request: Request) -> Response:
        rows = webhook_endpoints_list(user=signed_in_user(request))
        return Response(io.WebhookOutput(rows, many=True).data)

    @extend_schema(operation_id="webhook_create",
                   summary="Add a webhook endpoint (its secret is in this answer only)",
                   request=io.WebhookCreateInput,
                   responses={201: io.WebhookCreatedOutput,
                              **error_responses(400, 401, 409)})
    def post(self, request: Request) -> Response:
        form = io.WebhookCreateInput(data=request.data)
        form.is_valid(raise_exception=True)
        endpoint, secret = webhook_endpoint_create(
            user=signed_in_user(request), url=form.validated_data["url"],
            benchmark_slug=form.validated_data["benchmark"])
        body = io.WebhookOutput(endpoint).data
        return Response({**body, "secret": secret}, status=status.HTTP_201_CREATED)


class WebhookDeleteView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="webhook_delete", summary="Remove a webhook endpoint",
                   responses={204: None, **error_responses(401, 404)})
    def delete(self, request: Request, webhook_id: int) -> Response:
        webhook_endpoint_delete(user=signed_in_user(request), endpoint_id=webhook_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookTestView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="webhook_test_send",
                   summary="Send a test event to every webhook endpoint of the caller",
                   request=None,
                   responses={202: io.TestEventOutput, **error_responses(400, 401, 429)})
    def post(self, request: Request) -> Response:
        ids = webhook_test_event_send(user=signed_in_user(request))
        return Response(io.TestEventOutput({"deliveries": ids}).data,
                        status=status.HTTP_202_ACCEPTED)


class DeliveryListView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="notification_delivery_list",
                   summary="The caller's latest 50 deliveries, each with its tries",
                   responses={200: io.DeliveryOutput(many=True), **error_responses(401)})
    def get(self, request: Request) -> Response:
        rows = notification_deliveries_list(user=signed_in_user(request))
        return Response(io.DeliveryOutput(rows, many=True).data)
