"""Session housekeeping on sign-in, whichever view signed the user in (ours, the admin's, a test's force_login)."""

from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver

from users.security import session_signed_in


@receiver(user_logged_in, dispatch_uid="accounts.session_signed_in")
def _start_session_clocks(sender, request, user, **kwargs):
    if request is not None and hasattr(request, "session"):
        session_signed_in(request)
