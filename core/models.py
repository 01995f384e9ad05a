"""The portal's own tables: the audit trail of every call made to the bank."""

from __future__ import annotations

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models


class BankCall(models.Model):
    """One HTTP attempt to the bank (a retried call has one row per attempt, sharing the X-Request-ID).

    Written by ``core.bank.AuditSink`` from the client's audit hook. Never holds a PSU identifier, a
    signature or a certificate: the client redacts them, and this table has no column for them.
    An operators' table (admin, support): its labels are English only, so they stay out of the nb catalogue.
    """

    started_at = models.DateTimeField("started at", db_index=True)
    method = models.CharField("method", max_length=8)
    path_template = models.CharField(
        "endpoint", max_length=200, help_text="Path template of the operation; ids are not recorded."
    )
    request_id = models.CharField("X-Request-ID", max_length=100, db_index=True)
    attempt = models.PositiveSmallIntegerField("attempt", default=1)
    status = models.PositiveSmallIntegerField(
        "HTTP status", null=True, blank=True, help_text="Empty when no answer came (timeout, refused)."
    )
    duration_ms = models.PositiveIntegerField("duration (ms)")
    tpp_message_codes = models.JSONField("tppMessage codes", default=list, blank=True)
    tpp_message_texts = models.JSONField("tppMessage texts", default=list, blank=True)
    psu_present = models.BooleanField("PSU present", help_text="PSU-IP-Address was sent.")
    bytes_sent = models.PositiveIntegerField("bytes sent")
    bytes_received = models.PositiveIntegerField("bytes received")
    error = models.CharField("error", max_length=100, blank=True, help_text="Exception class, if any.")
    refusal_reason = models.CharField(
        "reason not accepted",
        max_length=500,
        blank=True,
        help_text="Why the portal refused the bank's answer (its signature, or its X-Request-ID or Date).",
    )
    will_retry = models.BooleanField("retried", default=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name="user",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="bank_calls",
    )
    content_type = models.ForeignKey(
        ContentType, verbose_name="object type", null=True, blank=True, on_delete=models.SET_NULL
    )
    object_id = models.CharField("object id", max_length=64, blank=True)
    concerning = GenericForeignKey("content_type", "object_id")

    class Meta:
        verbose_name = "bank call"
        verbose_name_plural = "bank calls"
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

    name = models.CharField("certificate", max_length=40, unique=True)
    source = models.CharField("checked at", max_length=300, help_text="host:port of the handshake")
    subject = models.CharField("subject", max_length=500, blank=True)
    not_after = models.DateTimeField("valid until", null=True, blank=True)
    checked_at = models.DateTimeField("last checked")
    error = models.CharField("error", max_length=300, blank=True, help_text="Why the check failed, if it did.")

    class Meta:
        verbose_name = "certificate check"
        verbose_name_plural = "certificate checks"
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name}: {self.not_after or self.error}"
