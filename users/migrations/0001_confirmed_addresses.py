"""Accounts made before django-allauth: their address as allauth's EmailAddress. An active account had confirmed
its address (or was made by staff), so it counts as verified; an inactive one (a sign-up never confirmed, or an
account staff switched off) stays unconfirmed and inactive."""

from django.conf import settings
from django.db import migrations


def addresses(apps, schema_editor):
    alias = schema_editor.connection.alias
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    EmailAddress = apps.get_model("account", "EmailAddress")
    for user in User.objects.using(alias).exclude(email="").iterator():
        email = user.email.lower()
        if EmailAddress.objects.using(alias).filter(email=email).exists():
            continue
        EmailAddress.objects.using(alias).create(user=user, email=email, verified=user.is_active, primary=True)


class Migration(migrations.Migration):
    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("account", "0009_emailaddress_unique_primary_email"),
    ]

    operations = [migrations.RunPython(addresses, migrations.RunPython.noop)]
