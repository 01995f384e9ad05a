"""Forms of signing up, signing in and confirming the password. They validate; users.services writes."""

from __future__ import annotations

from django import forms
from django.contrib.auth import authenticate, get_user_model, password_validation
from django.contrib.auth.forms import AuthenticationForm, PasswordChangeForm, SetPasswordMixin
from django.utils.translation import gettext_lazy as _

from users import services

User = get_user_model()


def normalize_sign_in_name(value: str) -> str:
    """Customers sign in with their e-mail address, which is stored lower-case; other names stay as typed."""
    value = value.strip()
    return value.lower() if "@" in value else value


def _password_help_text() -> str:
    # The validators' own sentences as one paragraph (field.html shows help in a <p>, where a list cannot go).
    return " ".join(password_validation.password_validators_help_texts())


class SignUpForm(SetPasswordMixin, forms.Form):
    email = forms.EmailField(
        label=_("E-mail address"),
        max_length=150,  # it becomes the username
        widget=forms.EmailInput(attrs={"autocomplete": "email", "autofocus": True}),
    )
    password1, password2 = SetPasswordMixin.create_password_fields()

    # No "address already in use" error: that would tell anyone which addresses have accounts. The sign-up
    # service mails the owner instead, and the page answers the same in every case.
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["password1"].help_text = _password_help_text()

    def clean_email(self) -> str:
        return User.objects.normalize_email(self.cleaned_data["email"]).lower()

    def clean(self):
        cleaned = super().clean()
        self.validate_passwords()
        email = cleaned.get("email")
        # Checked against the would-be user (its username is the same address, so only the e-mail is given and
        # the similarity message names the e-mail address).
        self.validate_password_for_user(User(email=email or ""))
        return cleaned


class SignInForm(AuthenticationForm):
    """Django's sign-in form with the e-mail address as the name; django-axes counts its failures."""

    def __init__(self, request=None, *args, **kwargs):
        super().__init__(request, *args, **kwargs)
        self.fields["username"].label = _("E-mail address")
        self.fields["username"].widget.attrs.update({"autocomplete": "username", "inputmode": "email"})

    def clean_username(self) -> str:
        return normalize_sign_in_name(self.cleaned_data["username"])


class ReauthenticateForm(forms.Form):
    """The password again, before a payment; a wrong one counts as a failed sign-in (django-axes)."""

    password = forms.CharField(
        label=_("Password"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password", "autofocus": True}),
    )

    error_messages = {"invalid_password": _("That password is not correct. Please try again.")}

    def __init__(self, *args, request, **kwargs):
        super().__init__(*args, **kwargs)
        self.request = request

    def clean_password(self) -> str:
        password = self.cleaned_data["password"]
        if not password_confirms_user(self.request, password):
            raise forms.ValidationError(self.error_messages["invalid_password"], code="invalid_password")
        return password


def password_confirms_user(request, password: str) -> bool:
    """True when ``password`` is the signed-in user's, checked through authenticate() so django-axes counts it.

    A wrong password is a failed sign-in for django-axes (five in a row lock the name and address out; the
    locked-out answer is raised from authenticate itself). A right one forgets the earlier failures of this user
    from this address, as a successful sign-in does, so typos spread over a day do not add up to a lockout.
    """
    user = request.user
    authenticated = authenticate(request, username=user.get_username(), password=password)
    if authenticated is None or authenticated.pk != user.pk:
        return False
    services.user_reset_failed_sign_ins(request=request, username=user.get_username())
    return True


class CountedPasswordChangeForm(PasswordChangeForm):
    """Django's password-change form, but the old password goes through authenticate() (django-axes counts it).

    Django's form calls user.check_password(), which no sign-in limit sees: anyone holding a session could guess
    the password without limit there.
    """

    def __init__(self, user, *args, request, **kwargs):
        super().__init__(user, *args, **kwargs)
        self.request = request

    def clean_old_password(self) -> str:
        old_password = self.cleaned_data["old_password"]
        if not password_confirms_user(self.request, old_password):
            raise forms.ValidationError(self.error_messages["password_incorrect"], code="password_incorrect")
        return old_password
