"""Webhook addresses that are not public are refused whatever the Python version's
`ipaddress` says of them: the shared address space (where cloud providers answer instance
metadata), IETF protocol assignments, 6to4 and Teredo, and IPv6 forms that carry a private
IPv4 address (docs/api.md, 'Webhook URLs'). Refused when saved and again at delivery, where
a name may resolve elsewhere: the resolver here is the test's own (socket.getaddrinfo
replaced), and nothing is sent anywhere."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.notifications.addresses import address_public
from leaderboard.notifications.models import NotificationDelivery, WebhookEndpoint
from leaderboard.notifications.services import webhook_endpoint_create, webhook_test_event_send
from tests import factories
from tests.notifications.resolving import name_resolving

pytestmark = pytest.mark.django_db

NOT_PUBLIC = [
    "100.100.100.200",  # a cloud provider's instance metadata (shared address space)
    "100.64.0.1", "100.127.255.254",
    "192.0.0.192", "192.0.0.9",  # IETF protocol assignments
    "192.88.99.1", "198.18.0.1", "203.0.113.7", "240.0.0.1", "255.255.255.255",
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "2002:808:808::1",  # 6to4 of a public address: refused whole
    "2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
    "64:ff9b::a00:1", "64:ff9b::7f00:1", "64:ff9b::6464:64c8",  # NAT64 of 10/8, 127/8, 100.64/10
    "64:ff9b:1::808:808",  # NAT64 for local use
    "::ffff:100.64.0.1", "::a00:1", "::1", "fc00::1", "fe80::1%eth0", "fec0::1",
    "3fff::1", "5f00::1", "100::1", "2001:db8::1", "ff02::1",
]
PUBLIC = ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "2001:4860:4860::8888",
          "64:ff9b::808:808",  # NAT64 of a public address
          "::ffff:8.8.8.8"]


@pytest.mark.parametrize("address", NOT_PUBLIC)
def test_it_judges_a_special_purpose_address_not_public(address: str) -> None:
    assert address_public(address) is False


@pytest.mark.parametrize("address", PUBLIC)
def test_it_judges_a_global_address_public(address: str) -> None:
    assert address_public(address) is True


@pytest.mark.parametrize("url", [
    "http://100.100.100.200/latest/meta-data/", "http://100.64.0.1/", "http://192.0.0.192/",
    "http://[2002:7f00:1::]/", "http://[2001::1]/", "http://[64:ff9b::a9fe:a9fe]/",
])
def test_it_refuses_to_save_a_webhook_to_a_shared_or_special_purpose_address(
    settings: Settings, url: str
) -> None:
    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = False
    api = APIClient()
    api.force_authenticate(factories.user_create("metadata-seeker"))
    answer = api.post("/api/notifications/webhooks/", {"url": url}, format="json")
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["code"], error["field"]) == ("webhook_url_refused", "url")
    assert "not public" in error["message"]
    assert not WebhookEndpoint.objects.exists()


def test_it_refuses_at_delivery_a_name_that_now_resolves_to_the_metadata_address(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, sent: list[tuple[str, int]]
) -> None:
    from leaderboard.tasks.cpu import deliver_webhook

    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = False
    user = factories.user_create("rebinder")
    name_resolving(monkeypatch, "hooks.example.com", "93.184.215.14")  # public when saved
    webhook_endpoint_create(user=user, url="http://hooks.example.com/hook")
    [delivery_id] = webhook_test_event_send(user=user)
    # at delivery the name resolves to the metadata address
    name_resolving(monkeypatch, "hooks.example.com", "100.100.100.200")
    connections: list[Any] = []
    monkeypatch.setattr(socket, "create_connection",
                        lambda *args, **kwargs: connections.append(args) or pytest.fail(
                            "a connection was attempted"))
    assert deliver_webhook.apply(args=[delivery_id], task_id="t-rebind").get() == "failed"
    assert connections == []
    delivery = NotificationDelivery.objects.get(id=delivery_id)
    message = ("the host 'hooks.example.com' resolves to an address that is not public "
               "(loopback, private, shared, link-local or special-purpose: 100.100.100.200)")
    assert (delivery.status, delivery.failure_code, delivery.failure_reason) == (
        "failed", "webhook_url_refused", message)
    assert list(delivery.tries.values_list("status_code", "ok", "error")) == [
        (None, False, message)]
