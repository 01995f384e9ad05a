"""The second-factor invitations (``users.StaffInvitation``: who was invited, by whom, when, and whether the link
was used; never the link) in the roles: both "support" and "operators" may view them; only superusers invite."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

ROLES = ("support", "operators")
CODENAME = "view_staffinvitation"


def grant(apps, schema_editor):
    alias = schema_editor.connection.alias
    app_config = apps.get_app_config("users")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0, using=alias)
    app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    permission = Permission.objects.using(alias).filter(content_type__app_label="users", codename=CODENAME)
    for name in ROLES:
        group, _ = Group.objects.using(alias).get_or_create(name=name)
        group.permissions.add(*permission)


def revoke(apps, schema_editor):
    alias = schema_editor.connection.alias
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    permission = Permission.objects.using(alias).filter(content_type__app_label="users", codename=CODENAME)
    for group in Group.objects.using(alias).filter(name__in=ROLES):
        group.permissions.remove(*permission)


class Migration(migrations.Migration):
    dependencies = [
        ("users", "0002_staff_invitations"),
        ("staff", "0004_tpp_session_roles"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
