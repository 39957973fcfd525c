"""Exception hierarchy of the ``accounting`` package.

Every error raised on bad input is an :class:`AccountingError`. Raising one never
spends budget and never leaves a half-written ledger entry: callers validate first
and charge afterwards.
"""

from __future__ import annotations


class AccountingError(Exception):
    """Base class of every error raised by ``accounting``."""


class InvalidParameterError(AccountingError, ValueError):
    """A mechanism, budget or cost parameter is out of its domain.

    The message names the parameter, the value received and the accepted domain.
    """

    def __init__(self, parameter: str, value: object, requirement: str) -> None:
        self.parameter = parameter
        self.value = value
        self.requirement = requirement
        super().__init__(f"invalid {parameter}={value!r}: {requirement}")


class NoiseRangeError(InvalidParameterError):
    """A noise sampler cannot represent the requested scale (an epsilon too small, a
    sigma too large for its integer grid). Raised when a mechanism is built (one
    dimension, before it is admitted) or when the grid of a vector release is built for
    its dimension (after the release was admitted and charged): a run may stop on it
    like on an exhausted plan."""


class RelationMismatchError(AccountingError):
    """A mechanism's sensitivity was declared under a different neighbouring relation."""


class BudgetExceededError(AccountingError):
    """The filter refused a mechanism: admitting it would exceed the budget.

    After a refusal the session is halted (halt semantics) and admits nothing more.
    """


class SessionHaltedError(AccountingError):
    """The session already refused a mechanism or was closed; it admits nothing more."""


class MechanismStateError(AccountingError):
    """A stateful mechanism (e.g. an SVT instance) was used after it halted."""


class StatisticError(AccountingError):
    """The exact statistic handed to a mechanism has the wrong shape or is not finite."""


class LedgerError(AccountingError):
    """The ledger cannot be opened, written or read."""


class LedgerCorruptError(LedgerError):
    """The ledger's hash chain, totals or schema do not verify."""


class ForeignLedgerError(LedgerError):
    """The file is not a dpcg ledger (or belongs to another dataset than expected)."""


class UnknownDatasetError(LedgerError):
    """The ledger has no dataset registered under that id."""


class DuplicateDatasetError(LedgerError):
    """A dataset id is already registered in the ledger (ids are never reused)."""


class DatasetConflictError(LedgerError):
    """A dataset id is already registered with another neighbouring relation.

    Raised by :meth:`accounting.ledger.Ledger.ensure_dataset`; nothing is written.
    """


class LifetimeRuleError(LedgerError):
    """A run or a mechanism the dataset's lifetime rule cannot count (under a ``zcdp``
    lifetime: a ``basic`` run reserving delta > 0, or a mechanism with delta > 0 that
    is not zCDP). Raised before anything is written."""


class SigningError(LedgerError):
    """Base class of the errors about signed ledger heads (keys, signatures, head files)."""


class SigningUnavailableError(SigningError):
    """Signing or checking signatures needs the optional ``cryptography`` package
    (``pip install 'dpcg[sign]'``)."""


class KeyFileError(SigningError):
    """A key file is missing, unreadable, malformed, has unsafe permissions, or would
    overwrite an existing file."""


class WrongKeyError(SigningError):
    """The key given is not the key the ledger (or the exported head) is bound to."""


class UnsignedLedgerError(SigningError):
    """A signature check was asked for a ledger (or certificate) that carries none."""


class HeadFileError(SigningError):
    """An exported head file is not valid JSON of the head format, or its signature
    does not verify."""
