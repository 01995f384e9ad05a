"""A refused or failed sandbox operation, worded for the staff member who asked for it.

Every bank error of the sandbox area becomes one ``SandboxError``: the text to show (with the bank's own
tppMessage text when it gave one), the bank's ``path`` so that the form can put the text beside its field, and
the X-Request-ID so that the call can be found in the audit log.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from xs2a.errors import (
    ClientError,
    OutcomeUnknownError,
    ServerError,
    TransportError,
    UnexpectedResponseError,
    Xs2aError,
)


class SandboxError(Exception):
    def __init__(self, message: str, *, path: str | None = None, request_id: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.request_id = request_id

    def __str__(self) -> str:
        return self.message


def _bank_texts(exc: Xs2aError) -> str:
    parts = []
    for message in exc.tpp_messages:
        text = message.text or ""
        parts.append(f"{text} ({message.code})" if text else message.code)
    return "; ".join(parts)


def sandbox_error(exc: Xs2aError, *, what: str) -> SandboxError:
    """The ``SandboxError`` of a failed bank call; ``what`` names the thing asked for ("the customer")."""
    texts = _bank_texts(exc)
    if isinstance(exc, OutcomeUnknownError):  # before ServerError: a 5xx to a POST is both
        if exc.status is None:
            reason = _("The bank did not answer")
        else:
            status = f"HTTP {exc.status}{': ' + texts if texts else ''}"
            reason = _("The bank failed (%(status)s)") % {"status": status}
        message = _(
            "%(reason)s, so it is not known whether %(what)s went through. Check the customer list before trying "
            "again."
        ) % {"reason": reason, "what": what}
    elif isinstance(exc, TransportError):
        message = _("The bank could not be reached. Try again in a moment.")
    elif isinstance(exc, ClientError):
        if texts:
            message = _("The bank refused: %(texts)s") % {"texts": texts}
        else:
            message = _("The bank refused the request (HTTP %(status)s).") % {"status": exc.status}
    elif isinstance(exc, ServerError):
        if texts:
            message = _("The bank failed (HTTP %(status)s): %(texts)s") % {"status": exc.status, "texts": texts}
        else:
            message = _("The bank failed (HTTP %(status)s).") % {"status": exc.status}
    elif isinstance(exc, UnexpectedResponseError):
        message = _("The bank's answer could not be read (%(error)s).") % {"error": exc.message}
    else:
        message = _("The bank call failed: %(error)s") % {"error": texts or exc.message}
    if exc.request_id:
        message += f" [X-Request-ID {exc.request_id}]"
    return SandboxError(message, path=exc.path, request_id=exc.request_id)
