"""The authentication backend: allauth's (e-mail address or username, case-insensitive e-mail), checking each
candidate's password once.

allauth's own backend tries a login that looks like an e-mail address first as an address and then as a
username. A customer's username *is* the address, so a wrong password for an existing customer was hashed
twice, and for an unknown address once (the timing mitigation): the time of the answer told which addresses have
accounts. Here a user whose password was already checked in this attempt is not checked again, so every attempt
costs one hash, whoever it names.
"""

from __future__ import annotations

from allauth.account.auth_backends import AuthenticationBackend as AllauthBackend


class AuthenticationBackend(AllauthBackend):
    def authenticate(self, request, **credentials):
        self._checked: set = set()
        return super().authenticate(request, **credentials)

    def _check_password(self, user, password):
        if user is not None:
            checked = getattr(self, "_checked", set())
            if user.pk in checked:
                return None
            checked.add(user.pk)
        return super()._check_password(user, password)
