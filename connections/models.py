"""Bank connections of portal users: the connection (one PSU identity, and in corporate context one agreement, at
the bank), its event timeline, the state of each SCA redirect, and the consent reminders.

Writes go through connections/services.py (SCA states through connections/sca.py, TPP sessions through
connections/sessions.py); every change of ``BankConnection.state`` goes through
``services.connection_transition``, which appends a ``ConnectionEvent``. Every label is translated: the choice
labels are shown to users, the field labels to staff in the admin (in the language they chose).
"""

from __future__ import annotations

import re
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _

from connections import plugins
from connections.crypto import EncryptedTextField

#: An SCA state may be used this long after it was made (issue 6).
SCA_STATE_LIFETIME = timedelta(minutes=10)
#: An SCA within one TPP-Session-ID holds this long at the bank (bank-api-spec sections 3 and 8), across the
#: TPP's roles; never for a payment (dynamic linking). The portal keeps one TPP-Session-ID per user this long.
TPP_SESSION_LIFETIME = timedelta(hours=1)
#: A TPP-Session-ID is not given to an SCA that starts less than this before its hour ends (a new one is made):
#: the SCA's callback comes up to SCA_STATE_LIFETIME later and is confirmed in that session at the bank, whose
#: hour started a moment before the portal's (the redirect's way back) and whose clock may differ by a minute.
TPP_SESSION_MARGIN = SCA_STATE_LIFETIME + timedelta(minutes=2)
#: The bank-offered consent lasts this long after its SCA (bank-api-spec section 8, the bank's rule).
CONSENT_VALIDITY = timedelta(days=180)


class PsuContextChoice(models.TextChoices):
    """PSU-Context (spec section 1): whose accounts the PSU acts on."""

    PRIVATE = "PRIVATE", _("Private")  # the PSU's own accounts
    CORPORATE = "CORPORATE", _("Corporate")  # a company's accounts, through one agreement (PSU-Corporate-ID)


class ConnectionAccess(models.TextChoices):
    """What the connection was made for."""

    ACCOUNTS = "accounts", _("Account information and payments")  # bank-offered consent: accounts, balances
    PAYMENTS = "payments", _("Payments only")  # /v1/users: the PSU-ID only, no account consent


class ConnectionState(models.TextChoices):
    """Life of a bank connection. Allowed moves: ``services.CONNECTION_TRANSITIONS``."""

    # SCA succeeded and the PSU-ID is stored; the consented accounts have not been fetched (yet).
    PENDING = "pending", _("Waiting for accounts")
    # The consent works: accounts fetched, balances can be refreshed.
    ACTIVE = "active", _("Connected")
    # The bank answered 401 with scaRedirect or a consent error: the PSU must authenticate again. The old
    # consent data stays until a reconnect succeeds.
    NEEDS_RECONNECT = "needs_reconnect", _("Needs reconnecting")
    # The user disconnected: PSU identifiers, accounts and balances are removed; only the timeline remains.
    # The consent at the bank is left to the bank (spec section 5.7: the PSU revokes it there).
    DISCONNECTED = "disconnected", _("Disconnected")


class BankConnection(models.Model):
    """One PSU identity (and, in corporate context, one agreement) of a portal user at the bank."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="bank_connections"
    )
    context = models.CharField(_("context"), max_length=10, choices=PsuContextChoice.choices)
    access = models.CharField(
        _("access"), max_length=10, choices=ConnectionAccess.choices, default=ConnectionAccess.ACCOUNTS
    )
    state = models.CharField(
        _("state"), max_length=20, choices=ConnectionState.choices, default=ConnectionState.PENDING
    )
    # PSU-ID and PSU-Corporate-ID (the corporate agreement's id), encrypted at rest, with their keyed hashes for
    # lookups (the same bank identity connected again updates its connection instead of adding one).
    psu_id = EncryptedTextField(_("PSU-ID"), blank=True)
    psu_id_hash = models.CharField(_("PSU-ID lookup hash"), max_length=64, blank=True, editable=False)
    psu_corporate_id = EncryptedTextField(_("PSU-Corporate-ID"), blank=True)
    psu_corporate_id_hash = models.CharField(
        _("PSU-Corporate-ID lookup hash"), max_length=64, blank=True, editable=False
    )
    agreement_name = models.CharField(_("agreement"), max_length=140, blank=True)
    sca_at = models.DateTimeField(_("last SCA"), null=True, blank=True)
    consent_valid_until = models.DateTimeField(_("consent valid until"), null=True, blank=True)
    accounts_fetched_at = models.DateTimeField(_("accounts fetched"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("bank connection")
        verbose_name_plural = _("bank connections")
        ordering = ["created_at", "id"]
        constraints = [
            # One connection per bank identity and agreement for a user: a second SCA for the same identity
            # renews that connection (services.sca_callback_accept). Rows without identifiers (disconnected)
            # are outside the constraint.
            models.UniqueConstraint(
                fields=["user", "psu_id_hash", "psu_corporate_id_hash"],
                condition=~Q(psu_id_hash=""),
                name="bankconnection_identity_unique",
            ),
        ]
        indexes = [
            # The connections page and the accounts overview: a user's connections by state.
            models.Index(fields=["user", "state"], name="bankconnection_user_state_idx"),
            # The daily reminder run (services.consent_reminders_send): consents expiring within 14 days.
            models.Index(fields=["consent_valid_until", "state"], name="bankconnection_expiry_idx"),
        ]

    def __str__(self) -> str:
        return _("%(context)s connection #%(pk)s (%(state)s)") % {
            "context": self.get_context_display(),
            "pk": self.pk,
            "state": self.get_state_display(),
        }

    @property
    def is_corporate(self) -> bool:
        return self.context == PsuContextChoice.CORPORATE


class ConnectionEvent(models.Model):
    """The timeline of a connection: one row per state change (who, when, from, to, why)."""

    connection = models.ForeignKey(
        BankConnection, verbose_name=_("connection"), on_delete=models.CASCADE, related_name="events"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("Empty when the portal itself acted."),
    )
    at = models.DateTimeField(_("at"))
    from_state = models.CharField(_("from"), max_length=20, choices=ConnectionState.choices, blank=True)
    to_state = models.CharField(_("to"), max_length=20, choices=ConnectionState.choices)
    reason = models.CharField(_("why"), max_length=200)

    class Meta:
        verbose_name = _("connection event")
        verbose_name_plural = _("connection events")
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["connection", "at"], name="connectionevent_timeline_idx")]

    def __str__(self) -> str:
        return _("%(from)s to %(to)s: %(why)s") % {
            "from": self.get_from_state_display() or "-",
            "to": self.get_to_state_display(),
            "why": self.reason_shown,
        }

    @property
    def reason_shown(self) -> str:
        """The reason in the reader's language: the portal's own reasons are stored in English (the timeline is a
        record) and marked for translation where they are written; in a reason with a bank's code or a staff
        member's words in it (REASONS_WITH_WORDS), those stay as they were stored."""
        if not self.reason:
            return ""
        for pattern, template in REASONS_WITH_WORDS:
            if match := pattern.fullmatch(self.reason):
                return gettext(template) % match.groupdict()
        return gettext(self.reason)


#: The stored reasons that carry words of their own: how each is read back, and its translatable form.
REASONS_WITH_WORDS = [
    (
        re.compile(r"the bank asked for SCA again \((?P<code>[^)]*)\)"),
        gettext_noop("the bank asked for SCA again (%(code)s)"),
    ),
    (re.compile(r"staff: (?P<words>.*)", re.S), gettext_noop("staff: %(words)s")),
]


class ScaPurpose(models.TextChoices):
    """The purposes of SCA that this app starts. Another app adds its own (payments: "payment") by registering a
    handler for it (connections.plugins.register_purpose, in its AppConfig.ready()); the callback hands each state
    to its purpose's handler."""

    CONNECT = "connect", _("Connect a bank")  # bank-offered consent for a new connection
    RECONNECT = "reconnect", _("Reconnect")  # new consent for an existing connection (same PSU)
    AGREEMENT = "agreement", _("Corporate agreement")  # consent for an agreement picked from /v1/agreements
    USERS = "users", _("Identify for payments")  # /v1/users: the PSU-ID only (payment-only journey)


class TppSession(models.Model):
    """The TPP-Session-ID of a portal user (one at a time): sent on every SCA the user starts, so that an SCA
    done within it holds at the bank for an hour across the portal's roles (a consent after a payment needs no
    second identification where the bank allows it; a payment is always approved with its own SCA).

    It is replaced when its hour has passed, or when less than ``TPP_SESSION_MARGIN`` of it is left for a new SCA:
    counted from the first SCA completed in it (``sca_at``), or from its first use when none was. ``psu_id`` is
    the bank identity of that SCA, sent when the user connects again within the hour so that the bank can
    recognise the session. Encrypted at rest, like every PSU identifier. Each SCA's callback is confirmed at the
    bank in the session it started in (``ScaState.tpp_session_id``).
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="+"
    )
    session_id = EncryptedTextField(_("TPP-Session-ID"))
    started_at = models.DateTimeField(_("first used"))
    sca_at = models.DateTimeField(_("first SCA completed"), null=True, blank=True)
    psu_id = EncryptedTextField(_("PSU-ID of that SCA"), blank=True)

    class Meta:
        verbose_name = _("TPP session")
        verbose_name_plural = _("TPP sessions")

    def __str__(self) -> str:
        return _("TPP session of user #%(user)s") % {"user": self.user_id}

    @property
    def expires_at(self):
        return (self.sca_at or self.started_at) + TPP_SESSION_LIFETIME


class ScaState(models.Model):
    """The state of one SCA redirect: a per-redirect secret in the TPP-Redirect-URI of the call that started
    SCA (the ``state`` query parameter), which the callback must bring back, with the TPP-Session-ID sent then.

    At least 128 random bits (``secrets.token_urlsafe(32)``: 256), tied to the user and the browser session
    that started it, single-use (``used_at`` set by a conditional UPDATE), expiring after SCA_STATE_LIFETIME.
    The TPP-Session-ID is the user's (``TppSession``), shared by the SCAs of its hour: it names no redirect.
    """

    token = models.CharField(_("state"), max_length=64, unique=True)
    tpp_session_id = EncryptedTextField(_("TPP-Session-ID sent"), blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="+"
    )
    # SHA-256 of the Django session key: the session must be the same, and the key itself is not copied.
    session_key_hash = models.CharField(_("session"), max_length=64)
    # A purpose registered in connections.plugins (ScaPurpose, or another app's): its handler takes the callback.
    purpose = models.CharField(_("purpose"), max_length=20)
    context = models.CharField(_("context"), max_length=10, choices=PsuContextChoice.choices)
    connection = models.ForeignKey(
        BankConnection,
        verbose_name=_("connection"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text=_("Reconnect: the connection renewed. Agreement: the connection whose PSU-ID listed it."),
    )
    agreement_name = models.CharField(_("agreement"), max_length=140, blank=True)
    agreement_id_hash = models.CharField(_("agreement lookup hash"), max_length=64, blank=True)
    created_at = models.DateTimeField(_("created"))
    used_at = models.DateTimeField(_("used"), null=True, blank=True)

    class Meta:
        verbose_name = _("SCA state")
        verbose_name_plural = _("SCA states")

    def __str__(self) -> str:
        return _("SCA state #%(pk)s: %(purpose)s") % {"pk": self.pk, "purpose": self.purpose_label}

    @property
    def purpose_label(self) -> str:
        """The purpose in words (a purpose another app registers names its own label), else as stored."""
        return plugins.purpose_label(self.purpose)

    @property
    def expires_at(self):
        return self.created_at + SCA_STATE_LIFETIME


#: Reminders by mail this many days before a consent expires (issue 6), most urgent first.
CONSENT_REMINDER_DAYS = (1, 7, 14)


class ConsentReminder(models.Model):
    """One reminder mail about one consent (``consent_valid_until`` names it) at one threshold.

    The unique constraint makes sending idempotent across workers and repeated runs; a renewed consent has a new
    ``consent_valid_until`` and so gets its own reminders. ``sent_at`` is empty while a sender holds the claim.
    """

    connection = models.ForeignKey(
        BankConnection, verbose_name=_("connection"), on_delete=models.CASCADE, related_name="reminders"
    )
    consent_valid_until = models.DateTimeField(_("consent valid until"))
    days_before = models.PositiveSmallIntegerField(_("days before"))
    claimed_at = models.DateTimeField(_("claimed"))
    sent_at = models.DateTimeField(_("sent"), null=True, blank=True)

    class Meta:
        verbose_name = _("consent reminder")
        verbose_name_plural = _("consent reminders")
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "consent_valid_until", "days_before"], name="consentreminder_once"
            )
        ]

    def __str__(self) -> str:
        return _("reminder %(days)s days before %(date)s (connection #%(pk)s)") % {
            "days": self.days_before,
            "date": f"{self.consent_valid_until:%Y-%m-%d}",
            "pk": self.connection_id,
        }


class PsuBinding(models.Model):
    """A PSU-ID belongs to one portal user: the first whose SCA brought it back. Another user presenting it at the
    callback is refused (``IdentityRefusal``). Kept after a disconnect: the consent behind it may be alive at the
    bank for up to 180 days, and nobody else may take it over meanwhile."""

    psu_id_hash = models.CharField(_("PSU-ID lookup hash"), max_length=64, unique=True, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="+"
    )
    bound_at = models.DateTimeField(_("bound"), auto_now_add=True)

    class Meta:
        verbose_name = _("PSU-ID binding")
        verbose_name_plural = _("PSU-ID bindings")

    def __str__(self) -> str:
        return _("PSU-ID binding #%(pk)s (user #%(user)s)") % {"pk": self.pk, "user": self.user_id}


class IdentityRefusal(models.Model):
    """A redirect back from SCA whose claimed identity the portal refused: nothing was stored from it. Staff see
    these in the admin; each may be an attack (a PSU-ID or agreement id swapped in the address) or a mistake."""

    class Reason(models.TextChoices):
        PSU_ID_TAKEN = "psu_id_taken", _("PSU-ID bound to another portal user")
        SESSION_UNCONFIRMED = "session_unconfirmed", _("PSU-ID not confirmed by the bank in the SCA's TPP session")
        CORPORATE_ID_UNCONFIRMED = "corporate_unconfirmed", _("PSU-Corporate-ID not among the PSU's agreements")
        MISMATCH = "mismatch", _("SCA done as another bank user or agreement than expected")

    at = models.DateTimeField(_("at"), auto_now_add=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="+"
    )
    purpose = models.CharField(_("SCA purpose"), max_length=20)
    reason = models.CharField(_("reason"), max_length=30, choices=Reason.choices)
    psu_id_hash = models.CharField(_("PSU-ID lookup hash"), max_length=64, blank=True)
    psu_corporate_id_hash = models.CharField(_("PSU-Corporate-ID lookup hash"), max_length=64, blank=True)
    bound_to = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("PSU-ID bound to"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    detail = models.CharField(_("detail"), max_length=200, blank=True)

    class Meta:
        verbose_name = _("identity refusal")
        verbose_name_plural = _("identity refusals")
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["at"], name="identityrefusal_at_idx")]

    def __str__(self) -> str:
        return _("%(reason)s (user #%(user)s)") % {"reason": self.get_reason_display(), "user": self.user_id}
