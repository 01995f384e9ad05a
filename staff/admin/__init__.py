"""The portal's admin: one module per app whose tables staff read (imported here so that Django's admin
autodiscovery, which imports ``staff.admin``, registers them all).

The admin has no sign-in form of its own: ``/admin/login/`` sends visitors to the portal's sign-in (allauth's,
with its limits and the second factor staff need), and signed-in non-staff get 403.
"""

from allauth.account.decorators import secure_admin_login
from django.contrib import admin

from staff.admin import accounts, bank_calls, connections, payments  # noqa: F401

admin.site.login = secure_admin_login(admin.site.login)
