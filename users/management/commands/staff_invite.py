"""Mail a staff user a single-use link to enrol a second factor (users.services.staff_invitation_create).

    manage.py staff_invite EMAIL

EMAIL is the staff user's confirmed address; the link goes to it, never to whoever runs the command.
"""

from __future__ import annotations

from allauth.account.models import EmailAddress
from django.core.management.base import BaseCommand, CommandError

from users.selectors import confirmed_address
from users.services import InvitationRefused, staff_invitation_create


class Command(BaseCommand):
    help = "Mail a staff user (by their confirmed e-mail address) a single-use link to enrol a second factor."

    def add_arguments(self, parser):
        parser.add_argument("email", help="the staff user's confirmed e-mail address")

    def handle(self, *args, email: str, **options):
        users = {
            address.user
            for address in EmailAddress.objects.filter(email__iexact=email, verified=True).select_related("user")
            if address.user.is_staff or address.user.is_superuser
        }
        if not users:
            raise CommandError(f"no staff user has the confirmed address {email}")
        if len(users) > 1:
            raise CommandError(f"several staff users have the confirmed address {email}; use the admin's action")
        (user,) = users
        try:
            invitation = staff_invitation_create(user=user)
        except InvitationRefused as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Invitation for {user.get_username()} mailed to {confirmed_address(user)}; it works once, until "
            f"{invitation.expires_at:%Y-%m-%d %H:%M} UTC."
        )
