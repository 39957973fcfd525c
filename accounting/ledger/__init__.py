"""The durable, append-only, hash-chained privacy ledger (SQLite, one file).

* :class:`Ledger` - open/create a ledger, register datasets with a lifetime budget,
  reserve runs (:meth:`Ledger.open_run`), verify, export a certificate.
* :class:`LedgerRun` - one run's :class:`~accounting.entries.RunRecorder`.
* :func:`verify_certificate` - re-verify an exported JSON certificate offline.
* :func:`session_for_run` - a :class:`~accounting.session.Session` recording into a
  fresh run.

See ``docs/ledger.md`` (format and threat model) and
``docs/privacy/ledger-composition.md`` (why the lifetime accounting is sound).
"""

from accounting.ledger._format import CERTIFICATE_FORMAT, FORMAT_NAME, FORMAT_VERSION
from accounting.ledger._verify import DatasetTotals, RunTotals, VerificationReport
from accounting.ledger.certificate import check_certificate, verify_certificate
from accounting.ledger.session import session_for_run
from accounting.ledger.store import DatasetInfo, Ledger, LedgerRun, RunInfo

__all__ = [
    "CERTIFICATE_FORMAT",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "DatasetInfo",
    "DatasetTotals",
    "Ledger",
    "LedgerRun",
    "RunInfo",
    "RunTotals",
    "VerificationReport",
    "check_certificate",
    "session_for_run",
    "verify_certificate",
]
