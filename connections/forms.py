"""Forms of the bank-connection pages and the check of the SCA callback's query parameters."""

from __future__ import annotations

import re
import uuid

from django import forms
from django.utils.translation import gettext_lazy as _

from connections.models import ConnectionAccess, PsuContextChoice
from core.bank import CALLBACK_STATE


class ConnectForm(forms.Form):
    context = forms.ChoiceField(
        label=_("Whose accounts?"),
        choices=[
            (PsuContextChoice.PRIVATE, _("Private: my own accounts")),
            (PsuContextChoice.CORPORATE, _("Corporate: a company's accounts I have access to")),
        ],
        initial=PsuContextChoice.PRIVATE,
        widget=forms.RadioSelect,
        help_text=_("You can change this at the bank's screen too."),
    )
    access = forms.ChoiceField(
        label=_("What for?"),
        choices=[
            (ConnectionAccess.ACCOUNTS, _("See my accounts and balances, and pay")),
            (ConnectionAccess.PAYMENTS, _("Only pay (the bank shares no account information)")),
        ],
        initial=ConnectionAccess.ACCOUNTS,
        widget=forms.RadioSelect,
    )
    in_app = forms.BooleanField(
        label=_("Approve in my bank's app instead of the browser"),
        required=False,
        help_text=_("Where your bank offers it, you confirm in its app on your phone."),
    )


class AgreementForm(forms.Form):
    """Pick one of the agreements the bank listed (the choices are set from the bank's answer)."""

    agreement = forms.ChoiceField(label=_("Agreement"), widget=forms.RadioSelect)

    def __init__(self, *args, agreements=(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.agreements = {a.id: a for a in agreements}
        self.fields["agreement"].choices = [(a.id, a.name or _("Agreement without a name")) for a in agreements]

    def chosen(self):
        return self.agreements[self.cleaned_data["agreement"]]


def _uuid_or_none(value: str | None) -> str | None:
    """The canonical (lower-case, hyphenated) form of an RFC 4122 UUID, in any letter case; None otherwise."""
    if value is None or len(value) != 36:
        return None
    try:
        parsed = uuid.UUID(value)
    except (ValueError, AttributeError):
        return None
    return str(parsed) if str(parsed) == value.lower() else None


FAILURE_PARAMETERS = ("system", "status", "code", "message")
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

#: What a failure redirect's code means for the person at the screen (spec section 7). The redirect is a claim
#: anyone can make up: only these words are shown, never the message or other text of the address.
FAILURE_EXPLAINED = {
    "SCA_INVALID": _("The approval at the bank was stopped before it was completed."),
    "SCA_EXPIRED": _("The time to approve at the bank ran out."),
    "SCA_NOT_FOUND": _("The bank no longer knew this approval; it may have run out."),
    "PSU_CREDENTIALS_INVALID": _("The bank could not confirm who you are."),
    "FORBIDDEN": _("The bank did not allow this for your customer relationship."),
    "CONSENT_INVALID": _("The bank did not accept the consent."),
    "SYSTEM_ERROR": _("The bank had a technical problem."),
}
FAILURE_UNKNOWN = _("The bank did not complete the approval.")


def callback_failure(query) -> str | None:
    """The failure redirect (spec section 6): its code when it is one the portal knows (see
    ``FAILURE_EXPLAINED``), "" for any other failure; None when the address is not a failure redirect."""
    if not any(name in query for name in FAILURE_PARAMETERS):
        return None
    code = str(query.get("code", ""))
    return code if code in FAILURE_EXPLAINED else ""


def failure_explained(code: str) -> str:
    return str(FAILURE_EXPLAINED.get(code, FAILURE_UNKNOWN))


_STATUS = re.compile(r"[1-5][0-9]{2}", re.ASCII)


def failure_details(query, code: str) -> list[tuple[str, str]]:
    """The failure redirect's technical facts for the page's "Details" disclosure (for support, not the
    explanation): the code when the portal knows it and the HTTP status when it is one. Nothing else of the
    address is shown, neither the message nor the system name: anyone can make up such an address."""
    details = []
    if code:
        details.append((str(_("Code")), code))
    status = str(query.get("status", ""))
    if _STATUS.fullmatch(status):
        details.append((str(_("Status")), status))
    return details


def failure_context(query, code: str) -> dict:
    """What the "the bank did not confirm" pages show: the plain explanation, and the details behind it."""
    return {"explained": failure_explained(code), "details": failure_details(query, code)}


def _token_or_none(value: str | None) -> str | None:
    if not value or len(value) > 64 or not set(value) <= _TOKEN_CHARS:
        return None
    return value


def callback_state(query) -> str | None:
    """The per-redirect state the portal put in the SCA's TPP-Redirect-URI, when well-formed."""
    return _token_or_none(query.get(CALLBACK_STATE))


def callback_success(query) -> tuple[dict[str, str] | None, str]:
    """(parameters, "") when the success parameters are well-formed, else (None, what is wrong). UUIDs are
    accepted in either letter case (RFC 4122) and given in their canonical lower-case form. ``state`` is the
    portal's own parameter of the TPP-Redirect-URI; the others are the bank's (spec section 6)."""
    state = callback_state(query)
    if state is None:
        return None, CALLBACK_STATE
    token = _token_or_none(query.get("tpp-session-id", ""))
    if token is None:
        return None, "tpp-session-id"
    psu_id = _uuid_or_none(query.get("psu-id"))
    if psu_id is None:
        return None, "psu-id"
    context = query.get("context", "")
    if context not in PsuContextChoice.values:
        return None, "context"
    corporate = query.get("psu-corporate-id")
    corporate_id = _uuid_or_none(corporate) if corporate is not None else None
    if corporate is not None and corporate_id is None:
        return None, "psu-corporate-id"
    if context == PsuContextChoice.CORPORATE and corporate_id is None:
        return None, "psu-corporate-id"
    if context == PsuContextChoice.PRIVATE and corporate_id is not None:
        return None, "psu-corporate-id"
    return {
        "state": state,
        "tpp_session_id": token,
        "psu_id": psu_id,
        "context": context,
        "psu_corporate_id": corporate_id,
    }, ""
