"""The portal's own tables: the audit trail of every call made to the bank."""

from __future__ import annotations

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.utils.translation import gettext_lazy as _


class BankCall(models.Model):
    """One HTTP attempt to the bank (a retried call has one row per attempt, sharing the X-Request-ID).

    Written by ``core.bank.AuditSink`` from the client's audit hook. Never holds a PSU identifier, a
    signature or a certificate: the client redacts them, and this table has no column for them.
    An operators' table (admin, support): its labels are translated like every page.
    """

    started_at = models.DateTimeField(_("started at"), db_index=True)
    method = models.CharField(_("method"), max_length=8)
    path_template = models.CharField(
        _("endpoint"), max_length=200, help_text=_("Path template of the operation; ids are not recorded.")
    )
    request_id = models.CharField(_("X-Request-ID"), max_length=100, db_index=True)
    attempt = models.PositiveSmallIntegerField(_("attempt"), default=1)
    status = models.PositiveSmallIntegerField(
        _("HTTP status"), null=True, blank=True, help_text=_("Empty when no answer came (timeout, refused).")
    )
    duration_ms = models.PositiveIntegerField(_("duration (ms)"))
    tpp_message_codes = models.JSONField(_("tppMessage codes"), default=list, blank=True)
    tpp_message_texts = models.JSONField(_("tppMessage texts"), default=list, blank=True)
    psu_present = models.BooleanField(_("PSU present"), help_text=_("PSU-IP-Address was sent."))
    bytes_sent = models.PositiveIntegerField(_("bytes sent"))
    bytes_received = models.PositiveIntegerField(_("bytes received"))
    error = models.CharField(_("error"), max_length=100, blank=True, help_text=_("Exception class, if any."))
    refusal_reason = models.CharField(
        _("reason not accepted"),
        max_length=500,
        blank=True,
        help_text=_("Why the portal refused the bank's answer (its signature, or its X-Request-ID or Date)."),
    )
    will_retry = models.BooleanField(_("retried"), default=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="bank_calls",
    )
    content_type = models.ForeignKey(
        ContentType, verbose_name=_("object type"), null=True, blank=True, on_delete=models.SET_NULL
    )
    object_id = models.CharField(_("object id"), max_length=64, blank=True)
    concerning = GenericForeignKey("content_type", "object_id")

    class Meta:
        verbose_name = _("bank call")
        verbose_name_plural = _("bank calls")
        ordering = ["-started_at", "-id"]
        indexes = [
            # The object's timeline ("every bank call about this payment"), read by the status pages and admin.
            models.Index(fields=["content_type", "object_id", "started_at"], name="bankcall_object_idx"),
        ]

    def __str__(self) -> str:
        status = self.status if self.status is not None else "no answer"
        return f"{self.method} {self.path_template} -> {status} ({self.request_id})"


class CertificateCheck(models.Model):
    """The last check of the bank's TLS certificate, which only a TLS handshake shows (core/certificates.py).

    Written at a worker's start and daily by ``tpp_portal.check_certificates``; read by the staff dashboard and
    the metrics. The certificates the portal holds as files (QSealC, the bank's seal) are read from the files
    themselves whenever they are needed, so they need no row here.
    """

    name = models.CharField(_("certificate"), max_length=40, unique=True)
    source = models.CharField(_("checked at"), max_length=300, help_text=_("host:port of the handshake"))
    subject = models.CharField(_("subject"), max_length=500, blank=True)
    not_after = models.DateTimeField(_("valid until"), null=True, blank=True)
    checked_at = models.DateTimeField(_("last checked"))
    error = models.CharField(
        _("error"), max_length=300, blank=True, help_text=_("Why the check failed, if it did.")
    )

    class Meta:
        verbose_name = _("certificate check")
        verbose_name_plural = _("certificate checks")
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name}: {self.not_after or self.error}"
