from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = _("Bank accounts")

    def ready(self):
        from accounts import metrics, refresh, services
        from connections import plugins
        from core.metrics import state_source

        state_source("refresh", metrics.refresh_gauges)

        # A consent granted: read its accounts and balances, then their transactions, while the PSU is present
        # (attended: no unattended allowance spent). A connection ended: its accounts, balances and transactions
        # go.
        plugins.on_consent_granted(services.connection_fetch_accounts)
        plugins.on_consent_granted(refresh.connection_read_transactions)
        plugins.on_connection_ended(services.connection_accounts_remove)
