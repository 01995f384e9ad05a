"""Session housekeeping on sign-in, whichever view signed the user in (allauth's, a test's force_login), and the
confirmed address of accounts that were not made by signing up, and the language of the first sign-in for the
portal's mails."""

from allauth.account.authentication import get_authentication_records
from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.utils.translation import get_language

from users.security import SECOND_FACTOR_KEY, session_mark_second_factor, session_signed_in
from users.services import mail_language_remember


@receiver(user_logged_in, dispatch_uid="accounts.session_signed_in")
def _start_session_clocks(sender, request, user, **kwargs):
    if request is None or not hasattr(request, "session"):
        return
    # The portal's mails come in the language of the first sign-in until the user chooses one.
    mail_language_remember(user=user, language=get_language() or "", replace=False)
    session_signed_in(request)
    request.session.pop(SECOND_FACTOR_KEY, None)
    if any(record.get("method") == "mfa" for record in get_authentication_records(request, user)):
        session_mark_second_factor(request)


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="users.confirmed_address")
def _confirmed_address_of_accounts_made_by_staff(sender, instance, created, raw=False, **kwargs):
    """An account made by staff or a command (the admin, createsuperuser, ensure_demo_users) has the address they
    typed, confirmed: its owner signs in without a code, as before allauth. An account made by signing up
    (users.adapter marks it) confirms its address with the mailed code first."""
    if not created or raw or not instance.email or getattr(instance, "_made_by_sign_up", False):
        return
    EmailAddress.objects.get_or_create(
        user=instance, email=instance.email.lower(), defaults={"verified": True, "primary": True}
    )
