"""Staff sign in with a second factor (allauth.mfa): an authenticator app (TOTP) or a security key, with recovery
codes. A password alone never enrols one: without one, a staff user is told to open the single-use link a
superuser mailed them (users.services), and only a session that opened it may enrol; with one, the sign-in asks for
it, and a session that skipped it is signed out."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import format_hotp_value, hotp_value, yield_hotp_counters_from_time
from django.core import mail
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from tests.factories import DEFAULT_PASSWORD
from tests.signin import sign_in
from tests.users.helpers import mails_to
from users.models import StaffInvitation
from users.security import SECOND_FACTOR_KEY
from users.services import staff_invitation_create

pytestmark = [pytest.mark.django_db, pytest.mark.real_second_factor]
STAFF_PAGES = ["/admin/", "/staff/dashboard/", "/staff/sandbox/", "/"]


def totp(secret: str) -> str:
    return format_hotp_value(hotp_value(secret, next(yield_hotp_counters_from_time())))


@pytest.fixture
def staff(django_user_model, password):
    return django_user_model.objects.create_user(
        "staff@example.com", "staff@example.com", password, is_staff=True, is_superuser=True
    )


LINK = re.compile(r"https?://[^/\s]+(/auth/2fa/invitation/[^/\s]+/)")


def link_in(message) -> str:
    """The path of the invitation link of a mail."""
    match = LINK.search(message.body)
    assert match, message.body
    return match.group(1)


def invite(user, capture) -> str:
    """A superuser's invitation of ``user`` (the service the command and the admin's action call); returns the
    path of the link mailed to the user's confirmed address."""
    with capture(execute=True):
        staff_invitation_create(user=user)
    return link_in(mails_to(user.email)[-1])


def open_invitation(client, link: str):
    """Open the link in a signed-in browser and press its button."""
    assert client.get(link).status_code == 200
    return client.post(link)


def enrol(client, password=DEFAULT_PASSWORD) -> str:
    """Set up an authenticator app through allauth's page (after the password again, which allauth asks before
    any change of factors) in a session that opened its invitation; returns its secret."""
    page = client.get(reverse("mfa_activate_totp"))
    if page.status_code == 302:
        assert page["Location"].startswith(reverse("account_reauthenticate"))
        again = client.post(page["Location"], {"password": password})
        assert again["Location"] == reverse("mfa_activate_totp")
        page = client.get(reverse("mfa_activate_totp"))
    assert page.status_code == 200
    secret = client.session["mfa.totp.secret"]
    response = client.post(reverse("mfa_activate_totp"), {"code": totp(secret)})
    assert response.status_code == 302, response.content.decode()[:2000]
    return secret


def test_enrolling_in_a_browser_asks_for_the_password_once_and_comes_back(
    client, staff, password, django_capture_on_commit_callbacks
):
    """As a browser follows the links: allauth asks for the password again before a change of factors even just
    after signing in; the password page must show (not send the browser straight back: a redirect loop), and the
    password brings the browser back to the app's page."""
    sign_in(client, staff.email, password)
    assert open_invitation(client, invite(staff, django_capture_on_commit_callbacks))["Location"] == reverse(
        "mfa_index"
    )
    page = client.get(reverse("mfa_index"))
    assert reverse("mfa_activate_totp") in page.content.decode()
    asked = client.get(reverse("mfa_activate_totp"))
    assert asked.status_code == 302 and asked["Location"].startswith(reverse("account_reauthenticate"))
    again = client.get(asked["Location"])
    assert again.status_code == 200, again.get("Location")
    back = client.post(asked["Location"], {"password": password})
    assert back["Location"] == reverse("mfa_activate_totp")
    assert client.get(back["Location"]).status_code == 200


@pytest.mark.parametrize("path", [*STAFF_PAGES, reverse("mfa_index"), reverse("mfa_activate_totp")])
def test_staff_without_a_second_factor_are_told_to_open_their_invitation(client, staff, password, path):
    assert sign_in(client, staff.email, password).status_code == 302
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == reverse("second_factor_needed")
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert "Open the link from that e-mail in this browser" in page.content.decode()


def test_a_password_alone_cannot_enrol_a_factor(client, staff, password):
    """Whoever holds a staff password posts allauth's enrolment form with a code of their own app, and the
    password again: nothing is enrolled, and the staff pages stay shut."""
    sign_in(client, staff.email, password)
    assert client.post(reverse("account_reauthenticate"), {"password": password})["Location"] == reverse(
        "second_factor_needed"
    )
    session = client.session
    session["mfa.totp.secret"] = "JBSWY3DPEHPK3PXP"  # what allauth's page would have shown
    session.save()
    refused = client.post(reverse("mfa_activate_totp"), {"code": totp("JBSWY3DPEHPK3PXP")})
    assert refused["Location"] == reverse("second_factor_needed")
    assert client.post(reverse("mfa_add_webauthn"), {})["Location"] == reverse("second_factor_needed")
    assert not Authenticator.objects.filter(user=staff).exists()
    assert client.get("/admin/")["Location"] == reverse("second_factor_needed")


def test_enrolling_an_authenticator_app_opens_the_staff_pages_and_makes_recovery_codes(
    client, staff, password, django_capture_on_commit_callbacks
):
    link = invite(staff, django_capture_on_commit_callbacks)
    sign_in(client, staff.email, password)
    open_invitation(client, link)
    enrol(client)
    assert Authenticator.objects.filter(user=staff, type=Authenticator.Type.TOTP).exists()
    assert Authenticator.objects.filter(user=staff, type=Authenticator.Type.RECOVERY_CODES).exists()
    assert client.get("/admin/").status_code == 200
    assert client.get("/staff/dashboard/").status_code == 200


def test_the_next_sign_in_asks_for_the_code(client, staff, password, django_capture_on_commit_callbacks):
    sign_in(client, staff.email, password)
    open_invitation(client, invite(staff, django_capture_on_commit_callbacks))
    secret = enrol(client)
    client.post(reverse("account_logout"))

    response = sign_in(client, staff.email, password, query="?next=/admin/")
    assert response["Location"] == reverse("mfa_authenticate")
    assert "_auth_user_id" not in client.session  # the password alone signs nobody in
    assert client.post(reverse("mfa_authenticate"), {"code": "000000"}).status_code == 200
    done = client.post(reverse("mfa_authenticate"), {"code": totp(secret)})
    assert done["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


def test_a_recovery_code_signs_in_instead_of_the_app(client, staff, password, django_capture_on_commit_callbacks):
    sign_in(client, staff.email, password)
    open_invitation(client, invite(staff, django_capture_on_commit_callbacks))
    enrol(client)
    codes = Authenticator.objects.get(user=staff, type=Authenticator.Type.RECOVERY_CODES).wrap().get_unused_codes()
    client.post(reverse("account_logout"))
    sign_in(client, staff.email, password)
    # No ``next``: staff land on the staff dashboard (users.adapter), after the second factor as after a password.
    landing = client.post(reverse("mfa_authenticate"), {"code": codes[0]})["Location"]
    assert landing == reverse("staff-dashboard")
    assert client.get(landing).status_code == 200
    assert client.get("/admin/").status_code == 200


def test_a_session_that_skipped_the_second_factor_is_signed_out(client, staff):
    Authenticator.objects.create(user=staff, type=Authenticator.Type.TOTP, data={"secret": "JBSWY3DPEHPK3PXP"})
    client.force_login(staff)  # not through the sign-in page, so no code was asked
    response = client.get("/admin/")
    assert response.status_code == 302 and response["Location"].startswith(reverse("account_login"))
    assert "_auth_user_id" not in client.session


def test_the_admins_own_sign_in_is_the_portals(client):
    response = client.get("/admin/login/?next=/admin/")
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("account_login"))


def test_customers_need_no_second_factor(alice_client):
    assert alice_client.get(reverse("account")).status_code == 200


# --- the invitation ------------------------------------------------------------------------------------------


def test_an_anonymous_visitor_of_the_link_signs_in_first_and_comes_back(
    client, staff, password, django_capture_on_commit_callbacks
):
    link = invite(staff, django_capture_on_commit_callbacks)
    asked = client.get(link)
    assert asked.status_code == 302 and asked["Location"].startswith(reverse("account_login"))
    back = sign_in(client, staff.email, password, query="?" + asked["Location"].split("?", 1)[1])
    assert back["Location"] == link
    assert open_invitation(client, link)["Location"] == reverse("mfa_index")
    enrol(client)
    assert client.get("/admin/").status_code == 200


def test_the_link_works_once(client, staff, password, django_capture_on_commit_callbacks):
    link = invite(staff, django_capture_on_commit_callbacks)
    sign_in(client, staff.email, password)
    open_invitation(client, link)
    assert client.get(link).status_code == 404
    assert client.post(link).status_code == 404

    other = type(client)()  # the same user in another browser, with the same link
    sign_in(other, staff.email, password)
    assert other.post(link).status_code == 404
    assert other.get(reverse("mfa_activate_totp"))["Location"] == reverse("second_factor_needed")


def test_the_link_expires(client, staff, password, django_capture_on_commit_callbacks, settings):
    link = invite(staff, django_capture_on_commit_callbacks)
    StaffInvitation.objects.filter(user=staff).update(expires_at=timezone.now() - timedelta(seconds=1))
    sign_in(client, staff.email, password)
    assert client.get(link).status_code == 404
    assert client.post(link).status_code == 404
    assert client.get(reverse("mfa_activate_totp"))["Location"] == reverse("second_factor_needed")


def test_the_session_may_enrol_only_for_a_while_after_opening_the_link(
    client, staff, password, django_capture_on_commit_callbacks, clock, settings
):
    sign_in(client, staff.email, password)
    open_invitation(client, invite(staff, django_capture_on_commit_callbacks))
    clock.advance(seconds=settings.STAFF_ENROLMENT_WINDOW.total_seconds() + 1)
    assert client.get(reverse("mfa_activate_totp"))["Location"] == reverse("second_factor_needed")


def test_the_link_is_for_that_user_only(client, staff, django_user_model, django_capture_on_commit_callbacks):
    link = invite(staff, django_capture_on_commit_callbacks)
    other = django_user_model.objects.create_user(
        "other@example.com", "other@example.com", DEFAULT_PASSWORD, is_staff=True
    )
    sign_in(client, other.email, DEFAULT_PASSWORD)
    assert client.get(link).status_code == 404
    assert client.post(link).status_code == 404
    assert client.get(reverse("mfa_activate_totp"))["Location"] == reverse("second_factor_needed")
    assert StaffInvitation.objects.get(user=staff).used_at is None  # still the owner's to use


def test_a_newer_link_replaces_the_older_one(client, staff, password, django_capture_on_commit_callbacks):
    older = invite(staff, django_capture_on_commit_callbacks)
    newer = invite(staff, django_capture_on_commit_callbacks)
    sign_in(client, staff.email, password)
    assert client.post(older).status_code == 404
    assert open_invitation(client, newer)["Location"] == reverse("mfa_index")


def test_only_a_hash_of_the_token_is_stored(staff, django_capture_on_commit_callbacks):
    link = invite(staff, django_capture_on_commit_callbacks)
    token = link.rstrip("/").rsplit("/", 1)[1]
    (stored,) = StaffInvitation.objects.filter(user=staff).values_list("token_hash", flat=True)
    assert len(token) >= 40 and token not in stored and len(stored) == 64


def test_the_command_mails_the_link_to_the_confirmed_address(
    client, staff, password, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        call_command("staff_invite", "STAFF@example.com")
    (message,) = mail.outbox
    assert message.to == ["staff@example.com"]
    assert message.subject == "Set up your second factor for Fjordpay"
    sign_in(client, staff.email, password)
    assert open_invitation(client, link_in(message))["Location"] == reverse("mfa_index")


def test_the_command_refuses_a_customer_and_an_unknown_address(alice):
    from django.core.management.base import CommandError

    for address in (alice.email, "nobody@example.com"):
        with pytest.raises(CommandError, match="no staff user"):
            call_command("staff_invite", address)
    assert mail.outbox == []


def signed_in_with_a_factor(client, user):
    """``client`` signed in as ``user``, with an authenticator app, used (as a real sign-in leaves it)."""
    Authenticator.objects.create(user=user, type=Authenticator.Type.TOTP, data={"secret": "JBSWY3DPEHPK3PXP"})
    client.force_login(user)
    session = client.session
    session[SECOND_FACTOR_KEY] = timezone.now().isoformat()
    session.save()
    return client


def test_superusers_mail_the_link_from_the_admin(
    client, staff, django_user_model, django_capture_on_commit_callbacks
):
    invited = django_user_model.objects.create_user(
        "new-staff", "new.staff@example.com", DEFAULT_PASSWORD, is_staff=True
    )
    signed_in_with_a_factor(client, staff)
    with django_capture_on_commit_callbacks(execute=True):
        done = client.post(
            reverse("admin:auth_user_changelist"),
            {"action": "invite_second_factor", "_selected_action": [invited.pk]},
        )
    assert done.status_code == 302
    (message,) = mails_to("new.staff@example.com")
    assert StaffInvitation.objects.get(user=invited).invited_by == staff
    other = type(client)()
    sign_in(other, "new-staff", DEFAULT_PASSWORD)
    assert open_invitation(other, link_in(message))["Location"] == reverse("mfa_index")


def test_the_admin_action_is_for_superusers_only(client, charlie):
    """charlie (staff with the permission to view users) sees the list, without the action; posting it anyway
    does nothing."""
    from django.contrib.auth.models import Permission

    charlie.user_permissions.add(Permission.objects.get(codename="view_user"))
    charlie_client = signed_in_with_a_factor(client, charlie)
    page = charlie_client.get(reverse("admin:auth_user_changelist"))
    assert page.status_code == 200
    assert "invite_second_factor" not in page.content.decode()
    charlie_client.post(
        reverse("admin:auth_user_changelist"), {"action": "invite_second_factor", "_selected_action": [charlie.pk]}
    )
    assert not StaffInvitation.objects.exists()
    assert mail.outbox == []
