"""The portal's password validators where Django's own fall short.

Django 5.2's minimum-length message (``"... at least %d characters."``) has no bokmål translation in Django's
catalogue, so a Norwegian sign-up got it in English: :class:`MinimumLengthValidator` says it in the portal's
words, translated in locale/nb.
"""

from __future__ import annotations

from django.contrib.auth import password_validation
from django.utils.translation import ngettext


class MinimumLengthValidator(password_validation.MinimumLengthValidator):
    def get_error_message(self) -> str:
        return ngettext(
            "This password is too short. It must have at least %(min_length)d character.",
            "This password is too short. It must have at least %(min_length)d characters.",
            self.min_length,
        ) % {"min_length": self.min_length}
