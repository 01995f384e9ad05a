"""Django's admin texts that Django's own bokmål catalogue leaves untranslated (Django 5.2), listed here so that
the portal's catalogue (locale/nb) holds their translation: a staff member reading the admin in bokmål would see
"Skip to main content" or "Show counts" in English otherwise. Nothing imports this module; ``makemessages``
reads it. Check the list again when Django is upgraded (tests/staff/test_staff_words.py).
"""

from django.utils.translation import gettext_noop, ngettext_lazy

DJANGO_ADMIN_WORDS = [
    gettext_noop("Select this object for an action - {}"),
    gettext_noop("Breadcrumbs"),
    gettext_noop("Model name"),
    gettext_noop("Add link"),
    gettext_noop("Change or view list link"),
    gettext_noop("After you’ve created a user, you’ll be able to edit more user options."),  # noqa: RUF001
    gettext_noop("Error:"),
    gettext_noop("Set password"),
    gettext_noop("Reset password"),
    gettext_noop("Raw passwords are not stored, so there is no way to see the user’s password."),  # noqa: RUF001
    gettext_noop("This action will <strong>enable</strong> password-based authentication for this user."),
    gettext_noop("Disable password-based authentication"),
    gettext_noop("Enable password-based authentication"),
    gettext_noop("Skip to main content"),
    gettext_noop("Hide counts"),
    gettext_noop("Show counts"),
    gettext_noop("Toggle theme (current theme: auto)"),
    gettext_noop("Toggle theme (current theme: light)"),
    gettext_noop("Toggle theme (current theme: dark)"),
    gettext_noop("Added:"),
    gettext_noop("Changed:"),
    gettext_noop("Deleted:"),
    gettext_noop("Forgotten your login credentials?"),
    gettext_noop("Sidebar"),
    gettext_noop("Start typing to filter…"),
    gettext_noop("Filter navigation items"),
    gettext_noop("View selected %(model)s"),
    gettext_noop("Thanks for spending some quality time with the web site today."),
    gettext_noop("In case you’ve forgotten, you are:"),  # noqa: RUF001
    gettext_noop("Select all objects on this page for an action"),
]
DJANGO_ADMIN_PLURALS = [ngettext_lazy("entry", "entries")]
