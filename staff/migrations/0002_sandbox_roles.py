"""The staff sandbox area in the roles: "support" may look at the bank's sandbox customers
(``sandbox_admin.view_sandbox``) and changes nothing there either; "operators" may also create and reset
(``sandbox_admin.change_sandbox``)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GRANTS = {
    "support": ["view_sandbox"],
    "operators": ["view_sandbox", "change_sandbox"],
}


def grant(apps, schema_editor):
    alias = schema_editor.connection.alias
    app_config = apps.get_app_config("sandbox_admin")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0, using=alias)
    app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GRANTS.items():
        group, _ = Group.objects.using(alias).get_or_create(name=name)
        group.permissions.add(
            *Permission.objects.using(alias).filter(content_type__app_label="sandbox_admin", codename__in=codenames)
        )


def revoke(apps, schema_editor):
    alias = schema_editor.connection.alias
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GRANTS.items():
        for group in Group.objects.using(alias).filter(name=name):
            group.permissions.remove(
                *Permission.objects.using(alias).filter(
                    content_type__app_label="sandbox_admin", codename__in=codenames
                )
            )


class Migration(migrations.Migration):
    dependencies = [
        ("staff", "0001_roles"),
        ("sandbox_admin", "0001_access_permissions"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
