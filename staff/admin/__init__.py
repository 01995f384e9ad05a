"""The portal's admin: one module per app whose tables staff read (imported here so that Django's admin
autodiscovery, which imports ``staff.admin``, registers them all)."""

from staff.admin import accounts, bank_calls, connections, payments  # noqa: F401
