"""The durable, append-only, hash-chained privacy ledger (SQLite file or PostgreSQL).

* :func:`open_ledger` - open a SQLite file or a ``postgresql://`` ledger
  (:class:`LedgerBackend`, the interface both implement; PostgreSQL needs the optional
  ``psycopg`` driver: :mod:`accounting.ledger.postgres`).

* :class:`Ledger` - open/create a ledger, register datasets with a lifetime budget,
  reserve runs (:meth:`Ledger.open_run`), verify, export a certificate.
* :class:`LedgerRun` - one run's :class:`~accounting.entries.RunRecorder`.
* :func:`verify_certificate` - re-verify an exported JSON certificate offline.
* :func:`session_for_run` - a :class:`~accounting.session.Session` recording into a
  fresh run.
* :func:`default_ledger_path` - the per-user default ledger file (``$DPCG_LEDGER``,
  else ``$XDG_DATA_HOME/dpcg/ledger.sqlite``, else ``~/.local/share/dpcg/ledger.sqlite``).
* Signed heads (optional ``cryptography`` extra): :func:`generate_keypair`,
  :func:`load_signing_key`, :func:`load_verify_key`, :meth:`Ledger.bind_signing_key`,
  :meth:`Ledger.export_head`, ``Ledger.verify(public_key=..., head=...)``.

See ``docs/ledger.md`` (format and threat model) and
``docs/privacy/ledger-composition.md`` (why the lifetime accounting is sound).
"""

from accounting.ledger._format import CERTIFICATE_FORMAT, FORMAT_NAME, FORMAT_VERSION
from accounting.ledger._verify import DatasetTotals, RunTotals, VerificationReport
from accounting.ledger.backend import LedgerBackend, RunHandle, is_postgres, open_ledger
from accounting.ledger.certificate import check_certificate, verify_certificate
from accounting.ledger.paths import LEDGER_ENV, default_ledger_path, resolve_ledger_path
from accounting.ledger.session import session_for_run
from accounting.ledger.signing import (
    KEY_ENV,
    SignedHead,
    SigningKey,
    VerifyKey,
    generate_keypair,
    load_signing_key,
    load_verify_key,
    read_head_file,
    signing_key_from_env,
)
from accounting.ledger.store import (
    DatasetInfo,
    Ledger,
    LedgerRun,
    RunInfo,
    check_dataset_id,
)

__all__ = [
    "CERTIFICATE_FORMAT",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "KEY_ENV",
    "LEDGER_ENV",
    "DatasetInfo",
    "DatasetTotals",
    "Ledger",
    "LedgerBackend",
    "LedgerRun",
    "RunHandle",
    "RunInfo",
    "RunTotals",
    "SignedHead",
    "SigningKey",
    "VerificationReport",
    "VerifyKey",
    "check_certificate",
    "check_dataset_id",
    "default_ledger_path",
    "generate_keypair",
    "is_postgres",
    "load_signing_key",
    "load_verify_key",
    "open_ledger",
    "read_head_file",
    "resolve_ledger_path",
    "session_for_run",
    "signing_key_from_env",
    "verify_certificate",
]
