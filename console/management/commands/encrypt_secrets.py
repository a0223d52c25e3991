"""``manage.py encrypt_secrets``: encrypt the plaintext secrets of saved revisions."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from console.services.audit_trail import record_audit
from console.services.secrets import encrypt_stored_secrets
from pipelines.spec.secrets import SecretDecryptionError, SecretsKeyError


class Command(BaseCommand):
    help = (
        "Encrypt every plaintext secret stored in channel revisions with the first key of "
        "SLUICE_SECRETS_KEY (revisions saved before encryption at rest). Idempotent. With "
        "--rotate, also re-encrypt the encrypted ones with the first key (after adding a "
        "new key in front of the old ones)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--rotate",
            action="store_true",
            help="Re-encrypt already encrypted secrets with the first key too.",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Count what would change; change nothing."
        )

    def handle(self, *args, **options) -> None:
        try:
            report = encrypt_stored_secrets(rotate=options["rotate"], dry_run=options["dry_run"])
        except (SecretDecryptionError, SecretsKeyError) as exc:
            raise CommandError(str(exc)) from None
        verb = "would change" if options["dry_run"] else "changed"
        self.stdout.write(
            f"{report.revisions} revisions checked, {report.changed} {verb}: "
            f"{report.plaintext} plaintext secrets encrypted"
            + (f", {report.rotated} re-encrypted with the first key" if options["rotate"] else "")
            + "."
        )
        if not options["dry_run"] and report.changed:
            record_audit(
                action="secrets.encrypt" + (".rotate" if options["rotate"] else ""),
                actor="system:cli",
                object_type="revision",
                changes={
                    "revisions": report.changed,
                    "plaintext": report.plaintext,
                    "rotated": report.rotated,
                },
                via="cli",
            )
