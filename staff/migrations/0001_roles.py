"""The staff roles as groups: "support" reads everything of the portal's customers and the audit log but changes
nothing; "operators" also run the admin actions (poll a payment, refresh an account, mark a connection for
reconnection) and correct exchange rates. Staff get a role by being put in a group (and ``is_staff``).

Permissions are made here for the models that exist so far (Django makes them only after the last migration).
"""

from django.contrib.auth.management import create_permissions
from django.db import migrations

SUPPORT = [
    ("auth", "view_user"),
    ("connections", "view_bankconnection"),
    ("connections", "view_connectionevent"),
    ("connections", "view_scastate"),
    ("connections", "view_consentreminder"),
    ("connections", "view_identityrefusal"),
    ("connections", "view_psubinding"),
    ("accounts", "view_bankaccount"),
    ("accounts", "view_balancesnapshot"),
    ("accounts", "view_transaction"),
    ("accounts", "view_refreshcall"),
    ("payments", "view_payment"),
    ("payments", "view_paymentevent"),
    ("payments", "view_paymentauthorisation"),
    ("payments", "view_exchangerate"),
    ("tpp_portal", "view_bankcall"),
]
OPERATORS = [
    *SUPPORT,
    ("connections", "change_bankconnection"),
    ("accounts", "change_bankaccount"),
    ("payments", "change_payment"),
    ("payments", "change_exchangerate"),
    ("payments", "add_exchangerate"),
]
ROLES = {"support": SUPPORT, "operators": OPERATORS}


def create_roles(apps, schema_editor):
    alias = schema_editor.connection.alias
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0, using=alias)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codes in ROLES.items():
        group, _ = Group.objects.using(alias).get_or_create(name=name)
        for app_label, codename in codes:
            # A model added by a later migration has no permission yet: that migration grants it.
            permission = Permission.objects.using(alias).filter(
                content_type__app_label=app_label, codename=codename
            )
            group.permissions.add(*permission)


def remove_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.using(schema_editor.connection.alias).filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("tpp_portal", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("connections", "0001_initial"),
        ("accounts", "0001_initial"),
        ("payments", "0001_initial"),
    ]

    operations = [migrations.RunPython(create_roles, remove_roles)]
