"""The portal's admin: one module per app whose tables staff read (imported here so that Django's admin
autodiscovery, which imports ``staff.admin``, registers them all).

The admin has no sign-in form of its own: ``/admin/login/`` sends visitors to the portal's sign-in (allauth's,
with its limits and the second factor staff need), and signed-in non-staff get 403 where they are: Django's admin
would first send them to ``/admin/login/?next=...`` (the address bar moving to a sign-in page for someone
already signed in), so every admin page refuses them itself.
"""

from functools import update_wrapper

from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.core.exceptions import PermissionDenied

from staff.admin import accounts, bank_calls, connections, payments  # noqa: F401

admin.site.login = secure_admin_login(admin.site.login)
_admin_view = admin.site.admin_view


def _refusing_admin_view(view, cacheable=False):
    """Django's ``admin_view`` (the sign-in for anonymous visitors, CSRF, no caching), with a signed-in user
    who is not staff refused by 403 on the page asked for instead of redirected to the admin's sign-in."""
    wrapped = _admin_view(view, cacheable)

    def inner(request, *args, **kwargs):
        if request.user.is_authenticated and not admin.site.has_permission(request):
            raise PermissionDenied
        return wrapped(request, *args, **kwargs)

    return update_wrapper(inner, wrapped)


admin.site.admin_view = _refusing_admin_view
