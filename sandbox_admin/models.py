"""The permissions of the staff sandbox area. The area has no data of its own (its data is the bank's), so the
permissions hang on a model whose table stays empty: ``sandbox_admin.view_sandbox`` reads the bank's sandbox
customers, ``sandbox_admin.change_sandbox`` creates customers, agreements, accounts and mock transactions and
resets the sandbox. The roles (staff/migrations) grant them: support may view, operators may also change."""

from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop


class SandboxAccess(models.Model):
    class Meta:
        # No row is ever written: only its permissions are used. (A table all the same, so that tools going
        # through every model, dumpdata included, need no exception for it.)
        verbose_name = _("sandbox access")
        verbose_name_plural = _("sandbox access")
        default_permissions = ()
        # Stored in English as every permission's name; the admin shows them translated (users.admin).
        permissions = [
            ("view_sandbox", gettext_noop("Can view the sandbox bank's customers")),
            ("change_sandbox", gettext_noop("Can change the sandbox bank (create, reset)")),
        ]

    def __str__(self) -> str:
        return "sandbox access"
