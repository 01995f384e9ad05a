"""allauth's forms with the portal's labels, and the changes that close the attacks of issue "sign-up and sign-in":

- :class:`SignUpForm`: a sign-up for an address whose account was never confirmed makes another unconfirmed
  account beside it; the first to type the mailed code keeps the address and the others are deleted with their
  passwords (users.adapter.confirm_email). So a stranger who signed up first with the owner's address cannot keep
  a password that works once the owner confirms (account pre-hijacking), and a stranger who signs up after the
  owner cannot undo the owner's sign-up. An address with a confirmed account gets the same answer as a new one
  and a mail to its owner (allauth's enumeration prevention); the password typed is hashed all the same, so the
  answer takes as long.
- :class:`SignInForm`: an account without any e-mail address (made by a command) is refused with a sentence
  saying why, instead of being sent to a confirmation page with nothing to confirm (a redirect loop).
- :class:`MailSettingsForm`: the language of the portal's mails and whether payments are mailed ("My account").
- :class:`ReauthenticateForm` and :class:`ChangePasswordForm`: the password typed goes through the adapter's
  authenticate(), so wrong ones count towards the sign-in limit (allauth's password change checks the old
  password without counting it).
"""

from __future__ import annotations

from allauth.account import forms as allauth_forms
from allauth.account.adapter import get_adapter
from allauth.account.internal.flows.manage_email import email_already_exists
from allauth.account.models import EmailAddress
from allauth.mfa.webauthn.forms import AddWebAuthnForm
from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.hashers import make_password
from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator
from django.utils.translation import get_language_info
from django.utils.translation import gettext_lazy as _

User = get_user_model()


def _password_help_text() -> str:
    # The validators' own sentences as one paragraph (field.html shows help in a <p>, where a list cannot go).
    return " ".join(password_validation.password_validators_help_texts())


def pending_sign_ups(email: str) -> list:
    """The accounts of ``email`` made by a sign-up that was never confirmed: no verified address, never signed
    in, no staff rights. Any other account with the address (confirmed, or made by staff) is a real one."""
    users = {address.user for address in EmailAddress.objects.filter(email__iexact=email).select_related("user")}
    users |= set(User.objects.filter(email__iexact=email))
    pending = []
    for user in users:
        if user.last_login or user.is_staff or user.is_superuser:
            return []
        if EmailAddress.objects.filter(user=user, verified=True).exists():
            return []
        pending.append(user)
    return pending


class SignInForm(allauth_forms.LoginForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        login = self.fields["login"]
        login.max_length = 254  # an address or a username is never longer; the database is not asked
        login.validators.append(MaxLengthValidator(254))
        # ACCOUNT_LOGIN_METHODS: customers sign in with their e-mail address, accounts made by staff (and the demo
        # users of `make run`) with their username too.
        login.label = _("E-mail address or username")
        login.error_messages["required"] = _("Enter your e-mail address or username.")
        login.widget.attrs.pop("placeholder", None)
        login.widget.attrs.update(
            {
                "autocomplete": "username",
                "autocapitalize": "none",
                "spellcheck": "false",  # a name, not prose (and not counted as the user types)
                "inputmode": "email",
                "autofocus": True,
            }
        )
        self.fields["password"].widget.attrs.pop("placeholder", None)
        self.fields["password"].help_text = ""
        self.fields["password"].error_messages["required"] = _("Enter your password.")

    def clean(self):
        cleaned_data = super().clean()
        user = getattr(self, "user", None)
        if user is not None and not user.email and not EmailAddress.objects.filter(user=user).exists():
            # Nothing to confirm: with mandatory confirmation allauth would send the browser to the confirmation
            # page, which has no code to ask for and sends it back here, round and round. The admin's add form
            # asks for an address (users.admin); an account made without one (a command) is refused plainly.
            raise ValidationError(
                _("This account has no e-mail address, so it cannot sign in. Ask an administrator to add one."),
                code="no_address",
            )
        return cleaned_data


class SignUpForm(allauth_forms.SignupForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        email = self.fields["email"]
        email.label = _("E-mail address")
        email.max_length = 150  # it becomes the username
        email.widget.attrs.pop("placeholder", None)
        email.widget.attrs.update({"autocomplete": "email", "autofocus": True})
        self.fields["password1"].label = _("Password")
        self.fields["password1"].help_text = _password_help_text()
        self.fields["password2"].label = _("Password confirmation")
        for name in ("password1", "password2"):
            self.fields[name].widget.attrs.pop("placeholder", None)
        # Each empty field says which it is: three times "This field is required." named none of them.
        email.error_messages["required"] = _("Enter your e-mail address.")
        self.fields["password1"].error_messages["required"] = _("Enter a password.")
        self.fields["password2"].error_messages["required"] = _("Enter the password again.")

    def validate_unique_email(self, value: str) -> str:
        if pending_sign_ups(value):
            return get_adapter().validate_unique_email(value)  # one more unconfirmed account beside those
        return super().validate_unique_email(value)

    def try_save(self, request):
        if self.account_already_exists:
            make_password(self.cleaned_data.get("password1"))  # the hashing work of a new account: same time
        return super().try_save(request)


class ConfirmEmailCodeForm(allauth_forms.ConfirmEmailVerificationCodeForm):
    """The mailed code of a sign-up. allauth refuses a right code when another account has the address; other
    unconfirmed sign-ups of it do not count (the first to confirm keeps it: users.adapter.confirm_email)."""

    def clean_code(self) -> str:
        code = allauth_forms.BaseConfirmCodeForm.clean_code(self)
        if code and not pending_sign_ups(self.email):
            email_already_exists(user=self.user, email=self.email, always_raise=True)
        return code


class ReauthenticateForm(allauth_forms.ReauthenticateForm):
    """The password again (before a payment); a wrong one counts towards the sign-in limit."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["password"].help_text = ""
        self.fields["password"].widget.attrs.pop("placeholder", None)
        self.fields["password"].widget.attrs["autofocus"] = True


class ChangePasswordForm(allauth_forms.ChangePasswordForm):
    """allauth's password change, the old password checked through authenticate() (counted)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.widget.attrs.pop("placeholder", None)
        self.fields["oldpassword"].help_text = ""
        self.fields["password1"].help_text = _password_help_text()

    def clean_oldpassword(self) -> str:
        password = self.cleaned_data.get("oldpassword", "")
        if not get_adapter().reauthenticate(self.user, password):
            raise get_adapter().validation_error("enter_current_password")
        return password


class AddSecurityKeyForm(AddWebAuthnForm):
    """allauth's form to add a security key, its name field labelled in the reader's language: allauth gives it
    no label, so Django showed "Name" (from the field's name) on the bokmål page too."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["name"].label = _("Name")


class MailSettingsForm(forms.Form):
    """ "E-mails" on "My account": the language of the portal's mails and whether payments are mailed."""

    language = forms.ChoiceField(label=_("Language of e-mails"), choices=())
    payment_mails = forms.BooleanField(
        label=_("E-mail me when a payment needs another signer, is rejected, is cancelled or is settled"),
        required=False,
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["language"].choices = [
            (code, get_language_info(code)["name_local"]) for code, _name in settings.LANGUAGES
        ]
