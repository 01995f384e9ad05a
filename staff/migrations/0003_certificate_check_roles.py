"""The certificate checks (``tpp_portal.CertificateCheck``, the bank's TLS certificate as last read) in the roles:
both "support" and "operators" may view them; nobody changes them (the daily check writes them)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

ROLES = ("support", "operators")
CODENAME = "view_certificatecheck"


def grant(apps, schema_editor):
    alias = schema_editor.connection.alias
    app_config = apps.get_app_config("tpp_portal")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0, using=alias)
    app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    permission = Permission.objects.using(alias).filter(content_type__app_label="tpp_portal", codename=CODENAME)
    for name in ROLES:
        group, _ = Group.objects.using(alias).get_or_create(name=name)
        group.permissions.add(*permission)


def revoke(apps, schema_editor):
    alias = schema_editor.connection.alias
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    permission = Permission.objects.using(alias).filter(content_type__app_label="tpp_portal", codename=CODENAME)
    for group in Group.objects.using(alias).filter(name__in=ROLES):
        group.permissions.remove(*permission)


class Migration(migrations.Migration):
    dependencies = [
        ("staff", "0002_sandbox_roles"),
        ("tpp_portal", "0002_certificatecheck"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
