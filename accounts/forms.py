"""Forms of signing up, signing in and confirming the password. They validate; accounts.user_services writes."""

from __future__ import annotations

from django import forms
from django.contrib.auth import authenticate, get_user_model, password_validation
from django.contrib.auth.forms import AuthenticationForm, SetPasswordMixin
from django.utils.translation import gettext_lazy as _

from accounts import user_selectors

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

    error_messages = {
        **SetPasswordMixin.error_messages,
        "email_taken": _("An account with this e-mail address already exists. Sign in or reset your password."),
    }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["password1"].help_text = _password_help_text()

    def clean_email(self) -> str:
        email = User.objects.normalize_email(self.cleaned_data["email"]).lower()
        if user_selectors.user_email_taken(email=email):
            raise forms.ValidationError(self.error_messages["email_taken"], code="email_taken")
        return email

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
        user = self.request.user
        authenticated = authenticate(self.request, username=user.get_username(), password=password)
        if authenticated is None or authenticated.pk != user.pk:
            raise forms.ValidationError(self.error_messages["invalid_password"], code="invalid_password")
        return password
