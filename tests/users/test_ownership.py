"""get_owned_or_404: the owner sees the object, anyone else gets 404, anonymous visitors go to sign in."""

import pytest
from django.contrib.admin.models import ADDITION, LogEntry
from django.http import Http404
from django.urls import reverse

from users.security import get_owned_or_404

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.users.urls")]


@pytest.fixture
def entry(alice):
    return LogEntry.objects.create(user=alice, action_flag=ADDITION, object_repr="alice's object")


def url(pk):
    return f"/test/entries/{pk}/"


@pytest.mark.parametrize(("who", "status"), [("alice", 200), ("bob", 404), ("charlie", 404)])
def test_the_matrix(client, request, entry, who, status):
    client.force_login(request.getfixturevalue(who))
    response = client.get(url(entry.pk))
    assert response.status_code == status
    if status == 200:
        assert response.content == b"entry: alice's object"


def test_anonymous_visitors_are_sent_to_sign_in(client, entry):
    assert client.get(url(entry.pk))["Location"] == f"{reverse('login')}?next={url(entry.pk)}"


def test_a_missing_or_malformed_id_is_the_same_404(alice_client, entry):
    assert alice_client.get(url(entry.pk + 1000)).status_code == 404
    assert alice_client.get(url("not-a-number")).status_code == 404


def test_querysets_and_managers_are_narrowed_too(entry, alice, bob):
    assert get_owned_or_404(LogEntry.objects.all(), user=alice, pk=entry.pk) == entry
    assert get_owned_or_404(LogEntry.objects, user=alice, pk=entry.pk) == entry
    with pytest.raises(Http404):
        get_owned_or_404(LogEntry.objects.all(), user=bob, pk=entry.pk)


def test_the_owner_may_sit_behind_a_relation(entry, alice, bob):
    # Like "connection__user" later: a path through another table that ends at the owning user.
    assert get_owned_or_404(LogEntry, user=alice, owner_field="user__logentry__user", pk=entry.pk) == entry
    with pytest.raises(Http404):
        get_owned_or_404(LogEntry, user=bob, owner_field="user__logentry__user", pk=entry.pk)


def test_a_lookup_can_only_narrow_never_widen(entry, bob):
    # Lookups are ANDed with the owner condition: naming alice's id does not give bob her object.
    with pytest.raises(Http404):
        get_owned_or_404(LogEntry, user=bob, user_id=entry.user_id, pk=entry.pk)
    with pytest.raises(TypeError):
        get_owned_or_404(LogEntry, user=bob, owner_field="user_id", user_id=entry.user_id)
