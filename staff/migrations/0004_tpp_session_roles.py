"""The TPP sessions of portal users (``connections.TppSession``: when each user's TPP-Session-ID was first used and
when its hour started, never the id itself) in the roles: both "support" and "operators" may view them; nobody
changes them (the SCA starts and callbacks write them)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

ROLES = ("support", "operators")
CODENAME = "view_tppsession"


def grant(apps, schema_editor):
    alias = schema_editor.connection.alias
    app_config = apps.get_app_config("connections")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0, using=alias)
    app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    permission = Permission.objects.using(alias).filter(content_type__app_label="connections", codename=CODENAME)
    for name in ROLES:
        group, _ = Group.objects.using(alias).get_or_create(name=name)
        group.permissions.add(*permission)


def revoke(apps, schema_editor):
    alias = schema_editor.connection.alias
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    permission = Permission.objects.using(alias).filter(content_type__app_label="connections", codename=CODENAME)
    for group in Group.objects.using(alias).filter(name__in=ROLES):
        group.permissions.remove(*permission)


class Migration(migrations.Migration):
    dependencies = [
        ("staff", "0003_certificate_check_roles"),
        ("connections", "0002_tpp_session"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
