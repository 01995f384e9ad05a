"""Re-encrypt the stored PSU identifiers with the first of FIELD_ENCRYPTION_KEYS (key rotation, step 2 of 3)."""

from django.core.management.base import BaseCommand

from connections.services import field_encryption_rotate


class Command(BaseCommand):
    help = "Re-encrypt every encrypted field with the first key of FIELD_ENCRYPTION_KEYS."

    def handle(self, *args, **options):
        rows = field_encryption_rotate()
        self.stdout.write(f"re-encrypted {rows} row(s) with the first key")
