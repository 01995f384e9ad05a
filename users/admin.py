"""The admin's users: the "Add user" form asks for the e-mail address, and superusers mail staff an invitation
to enrol a second factor (users.services).

An account made here has the typed address confirmed (users.signals): staff sign in with it or the username,
and the enrolment link goes to it. Without one the sign-in had nothing to confirm and sent the browser between
the sign-in and the confirmation page until it gave up; the form therefore refuses to make an account without one.
Operators' pages: labels are translated, like the customers' pages.
"""

from __future__ import annotations

import datetime as dt

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.utils import display_for_value
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.forms import AdminUserCreationForm
from django.contrib.auth.models import Group, Permission
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from users.models import MailSettings, SecondFactor, StaffInvitation
from users.selectors import confirmed_address
from users.services import InvitationRefused, staff_invitation_create

User = get_user_model()
#: Users one action invites at most (each is a mail).
INVITE_LIMIT = 20


class UserCreationWithAddressForm(AdminUserCreationForm):
    email = forms.EmailField(
        label=_("Email address"),
        max_length=254,
        help_text=_(
            "Required. Counts as confirmed: staff sign in with it and get their second-factor link there."
        ),
    )

    class Meta(AdminUserCreationForm.Meta):
        fields = ("username", "email")

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].strip().lower()
        taken = User.objects.filter(email__iexact=email).exists()
        if taken or EmailAddress.objects.filter(email__iexact=email).exists():
            raise forms.ValidationError(_("Another account has this e-mail address."), code="unique")
        return email


#: The names of Django's default permissions, built from the model's translated name: Django stores each
#: permission's name in English ("Can change payment") when it makes it.
DEFAULT_PERMISSION_NAMES = {
    "add": _("Can add %(model)s"),
    "change": _("Can change %(model)s"),
    "delete": _("Can delete %(model)s"),
    "view": _("Can view %(model)s"),
}


def permission_label(permission: Permission) -> str:
    """A permission as the admin's permission selector lists it (Django's "app | model | name"), in the reader's
    language: "Betalinger | betaling | Kan endre betaling". A default permission's name is built from its action
    and the model's verbose name; another one's stored name is looked up in the catalogue (the portal's own are
    marked with gettext_noop where they are declared)."""
    model = permission.content_type.model_class()
    action, _sep, model_name = permission.codename.partition("_")
    if model is not None and action in DEFAULT_PERMISSION_NAMES and model_name == model._meta.model_name:
        name = DEFAULT_PERMISSION_NAMES[action] % {"model": model._meta.verbose_name}
    else:
        name = gettext(permission.name)
    return f"{permission.content_type} | {name}"


class PermissionLabelsMixin:
    """The permission selector of the user and group pages names the permissions in the reader's language."""

    permission_fields = frozenset({"permissions", "user_permissions"})

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        formfield = super().formfield_for_manytomany(db_field, request, **kwargs)
        if db_field.name in self.permission_fields:
            formfield.label_from_instance = permission_label
        return formfield

    def get_fieldsets(self, request, obj=None):
        """Staff who may only view (support) read the permissions as text, named like in the selector (the
        admin would print each permission's stored English name)."""
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None or self.has_change_permission(request, obj):
            return fieldsets
        swap = {name: "permissions_shown" for name in self.permission_fields}
        return [
            (title, {**options, "fields": [swap.get(name, name) for name in options["fields"]]})
            for title, options in fieldsets
        ]

    @admin.display(description=_("permissions"))
    def permissions_shown(self, obj) -> str:
        manager = obj.permissions if isinstance(obj, Group) else obj.user_permissions
        labels = [permission_label(permission) for permission in manager.select_related("content_type")]
        return ", ".join(labels) or self.get_empty_value_display()


admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(Group)
class PortalGroupAdmin(PermissionLabelsMixin, GroupAdmin):
    pass


class MailSettingsInline(admin.StackedInline):
    """The user's choice of mail language and payment mails (shown, never edited by staff)."""

    model = MailSettings
    fields = ("language_shown", "payment_mails", "updated_at")
    readonly_fields = fields
    can_delete = False
    extra = 0

    @admin.display(description=_("language of mails"))
    def language_shown(self, mail_settings: MailSettings) -> str:
        """The language by its name ("English"), not its code ("en")."""
        return str(dict(settings.LANGUAGES).get(mail_settings.language, mail_settings.language))

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(User)
class PortalUserAdmin(PermissionLabelsMixin, UserAdmin):
    inlines = (MailSettingsInline,)

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else ()  # the add form stays Django's own

    add_form = UserCreationWithAddressForm
    add_fieldsets = (
        (
            None,
            {
                "classes": ("wide",),
                "fields": ("username", "email", "usable_password", "password1", "password2"),
            },
        ),
    )
    actions = ["invite_second_factor"]

    def has_invite_permission(self, request) -> bool:
        return request.user.is_superuser

    @admin.action(description=_("Mail a second-factor enrolment link"), permissions=["invite"])
    def invite_second_factor(self, request, queryset) -> None:
        chosen = list(queryset.order_by("username")[: INVITE_LIMIT + 1])
        if len(chosen) > INVITE_LIMIT:
            self.message_user(
                request,
                ngettext(
                    "Choose at most %(limit)d user at a time.",
                    "Choose at most %(limit)d users at a time.",
                    INVITE_LIMIT,
                )
                % {"limit": INVITE_LIMIT},
                messages.ERROR,
            )
            return
        for user in chosen:
            try:
                invitation = staff_invitation_create(user=user, invited_by=request.user)
            except InvitationRefused as exc:
                self.message_user(request, _("Not invited: %(reason)s.") % {"reason": exc}, messages.ERROR)
                continue
            self.log_change(request, user, "Mailed a second-factor enrolment link.")
            self.message_user(
                request,
                _(
                    "Mailed %(user)s a second-factor enrolment link at %(address)s; it works once, until "
                    "%(expires)s UTC."
                )
                % {
                    "user": user.get_username(),
                    "address": confirmed_address(user),
                    "expires": f"{invitation.expires_at.astimezone(dt.UTC):%Y-%m-%d %H:%M}",
                },
                messages.SUCCESS,
            )


@admin.register(StaffInvitation)
class StaffInvitationAdmin(admin.ModelAdmin):
    """Who was invited, by whom, and whether the link was used (the link itself is not kept); the roles view it,
    nobody changes it."""

    list_display = ("user", "invited_by", "created_at", "expires_at", "used_at")
    list_filter = ("used_at",)
    fields = ("user", "invited_by", "created_at", "expires_at", "used_at")
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


admin.site.unregister(Authenticator)  # allauth.mfa's own registration: English names, and the secret shown


class _TitledDateFilter(admin.DateFieldListFilter):
    """A date filter titled with a translated name (Django titles it with the field's verbose name, which
    allauth's fields lack)."""

    titles = {"created_at": _("set up"), "last_used_at": _("last used")}

    def __init__(self, field, request, params, model, model_admin, field_path):
        super().__init__(field, request, params, model, model_admin, field_path)
        self.title = self.titles[field_path]


@admin.register(SecondFactor)
class SecondFactorAdmin(admin.ModelAdmin):
    """Which second factors a staff member has, since when, last used when. Shown, never added or changed here
    (staff enrol their own through an invitation); the secret they hold (``data``) is not shown at all. A
    superuser may delete one, e.g. of a lost phone: the staff member then enrols anew through an invitation."""

    list_display = ("user_shown", "kind", "set_up", "last_used")
    list_filter = ("type", ("created_at", _TitledDateFilter), ("last_used_at", _TitledDateFilter))
    list_select_related = ("user",)
    search_fields = ("=user__email", "=user__username")
    search_help_text = _("The staff member's exact e-mail address or username.")
    fields = ("user_shown", "kind", "set_up", "last_used")
    readonly_fields = fields

    @admin.display(description=_("user"), ordering="user__username")
    def user_shown(self, authenticator: Authenticator) -> str:
        return str(authenticator.user)

    @admin.display(description=_("type"), ordering="type")
    def kind(self, authenticator: Authenticator) -> str:
        return authenticator.get_type_display()

    # Formatted here: the change page prints a method's value as it is ("None", an unlocalised time).
    @admin.display(description=_("set up"), ordering="created_at")
    def set_up(self, authenticator: Authenticator) -> str:
        return display_for_value(authenticator.created_at, self.get_empty_value_display())

    @admin.display(description=_("last used"), ordering="last_used_at")
    def last_used(self, authenticator: Authenticator) -> str:
        return display_for_value(authenticator.last_used_at, self.get_empty_value_display())

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
