"""The ledger policy of every private run, in one place.

* :func:`default_ledger_path`: where a run is recorded when no ``--ledger`` is given:
  :func:`accounting.ledger.default_ledger_path` (per user: ``$DPCG_LEDGER``, else the
  XDG data directory), never the working directory.
* :func:`ledger_target`: the policy the CLI applies to every private algorithm: a durable
  ledger by default, ``--no-ledger`` for a throw-away in-memory run, ``--dataset-id``
  (required for ``--data``; a bundled sample defaults to its public recipe), and the
  lifetime budget ``--lifetime-epsilon/--lifetime-delta`` of a dataset id the ledger does
  not know yet (default: this run's budget).
* :func:`register_dataset_if_new`: the ONLY function that registers a dataset id (one
  ``BEGIN IMMEDIATE`` transaction: :meth:`Ledger.ensure_dataset`).
* :func:`open_session`: pre-flight (signing key, relation, lifetime >= the run's budget:
  nothing is written when one fails), then the run's
  :class:`~accounting.session.Session`, recorded in the ledger (or in memory), wrapped in
  a recorder that counts entries by mechanism.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit

from accounting.costs import Budget
from accounting.entries import EntryDraft, JSONValue, RunRecorder
from accounting.ledger import (
    LedgerBackend,
    check_dataset_id,
    is_postgres,
    open_ledger,
    session_for_run,
)
from accounting.ledger import default_ledger_path as _user_default_ledger
from accounting.ledger.custody import check_policy
from accounting.memory import InMemoryRecorder
from accounting.relations import Relation
from accounting.session import Session
from dpcg.errors import AlgorithmError

__all__ = ["DEFAULT_LEDGER_HELP", "CountingRecorder", "LedgerTarget", "SessionHandle",
           "default_ledger_path", "ledger_target", "open_session", "register_dataset_if_new"]

#: Where the default ledger is, in words (``--ledger`` help, docs).
DEFAULT_LEDGER_HELP = ("$DPCG_LEDGER, else $XDG_DATA_HOME/dpcg/ledger.sqlite, else "
                       "~/.local/share/dpcg/ledger.sqlite: one file per user")


def default_ledger_path() -> Path:
    """The ledger a private run writes when the user names none: the per-user file of
    :func:`accounting.ledger.default_ledger_path` (its directory is created, mode 0700).
    The lifetime of a dataset id is enforced per (ledger file, dataset id): a per-user
    default makes it per user, whatever the working directory."""
    return _user_default_ledger()


@dataclass(frozen=True)
class LedgerTarget:
    """Where a run is recorded: ``path=None`` keeps the entries in memory only."""

    #: A SQLite file, or a ``postgresql://`` URL (kept as a string: a Path would fold
    #: its ``//``); ``None``: in memory.
    path: Path | str | None = None
    dataset_id: str | None = None
    #: Lifetime budget of a dataset id the ledger does not know yet (None: the run's).
    lifetime: Budget | None = None
    #: The user declared ``lifetime`` (then a registered id with another lifetime is an
    #: error instead of the lifetime being ignored).
    lifetime_explicit: bool = False
    #: Private key file that signs the new ledger heads (``--ledger-key``; None: the
    #: ledger's own policy, ``$DPCG_LEDGER_KEY`` for a bound ledger).
    signing_key: Path | None = None
    #: The data file the run reads (the custodian's policy may govern it as a dataset id:
    #: :func:`accounting.ledger.custody.check_policy`); ``None``: not a file.
    data_path: Path | None = None
    #: The lifetime rule of a dataset id the ledger does not know yet (``basic`` or
    #: ``zcdp``; ``None``: basic); a registered id with another rule is an error.
    lifetime_rule: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.path, Path):  # LedgerTarget(Path(url)) folds a URL's //
            object.__setattr__(self, "path", _unfolded(self.path))
        if self.path is not None and (
            not isinstance(self.dataset_id, str) or not self.dataset_id.strip()
        ):
            raise AlgorithmError("dataset_id: a ledger run needs a declared dataset id")

    @property
    def durable(self) -> bool:
        return self.path is not None


#: A run kept in memory (experiments, audits).
IN_MEMORY = LedgerTarget()


def ledger_target(*, budget: Budget, no_ledger: bool = False,
                  path: Path | str | None = None,
                  dataset_id: str | None = None, default_dataset_id: str | None = None,
                  lifetime_epsilon: float | None = None,
                  lifetime_delta: float | None = None,
                  signing_key: Path | None = None,
                  data_path: Path | None = None,
                  lifetime_rule: str | None = None) -> LedgerTarget:
    """THE ledger policy of a private run (the same for every algorithm).

    ``default_dataset_id`` is the public recipe of a bundled sample (``None`` for a
    user's table, which must then be named with ``dataset_id``). ``path`` may be a
    ``postgresql://`` URL (a PostgreSQL ledger; no password in it: it would be shown
    in the result and the shell history, use ``PGPASSWORD`` or ``~/.pgpass``).
    ``data_path``: the data file, for the custodian's policy.
    """
    if no_ledger:
        given = [flag for flag, v in (("--ledger", path), ("--dataset-id", dataset_id),
                                      ("--lifetime-epsilon", lifetime_epsilon),
                                      ("--lifetime-delta", lifetime_delta),
                                      ("--lifetime-rule", lifetime_rule),
                                      ("--ledger-key", signing_key)) if v is not None]
        if given:
            raise AlgorithmError(f"--no-ledger: {', '.join(given)} only apply to a run "
                                 "recorded in a ledger")
        return IN_MEMORY if data_path is None else LedgerTarget(data_path=Path(data_path))
    dataset_id = dataset_id if dataset_id is not None else default_dataset_id
    if dataset_id is None:
        raise AlgorithmError(
            "--dataset-id: a private run on --data is recorded in the ledger under the "
            "dataset's declared id; pass --dataset-id ID (or --no-ledger for a "
            "throw-away experiment)"
        )
    lifetime = Budget(budget.epsilon if lifetime_epsilon is None else lifetime_epsilon,
                      budget.delta if lifetime_delta is None else lifetime_delta)
    explicit = lifetime_epsilon is not None or lifetime_delta is not None
    where: Path | str = default_ledger_path() if path is None else (
        str(path) if is_postgres(path) else _unfolded(Path(path)))
    if isinstance(where, str) and urlsplit(where).password is not None:
        raise AlgorithmError("--ledger: no password in a PostgreSQL ledger URL (it would be "
                             "shown in the result and the shell history); use PGPASSWORD "
                             "or ~/.pgpass")
    return LedgerTarget(where, dataset_id, lifetime, explicit,
                        None if signing_key is None else Path(signing_key),
                        None if data_path is None else Path(data_path), lifetime_rule)


def _unfolded(path: Path) -> Path | str:
    """``path``, or the ``postgresql://`` URL a caller turned into a ``Path`` (which folds
    ``//`` to ``/``: ``Path("postgresql://u@h/db")`` is ``postgresql:/u@h/db``); the URL
    is restored exactly (the scheme's ``//`` is the only one a ledger URL has)."""
    text = str(path)
    for scheme in ("postgresql:/", "postgres:/"):
        if text.startswith(scheme) and not text.startswith(scheme + "/"):
            return scheme + "/" + text[len(scheme):]
    return path


def register_dataset_if_new(ledger: LedgerBackend, dataset_id: str, lifetime: Budget,
                            relation: Relation, description: str = "", *,
                            explicit: bool = False, for_run: Budget | None = None,
                            for_rule: str | None = None,
                            lifetime_rule: str | None = None) -> None:
    """Register ``dataset_id`` with ``lifetime`` unless the ledger knows it already (the
    lifetime of a registered dataset is never changed: an ``explicit`` lifetime that
    differs from the registered one is an error, not silently ignored).

    Check and insert are one transaction (:meth:`Ledger.ensure_dataset`): concurrent
    first runs never fail spuriously. With ``for_run``, a run of that budget that cannot
    fit (new lifetime or remaining lifetime too small) raises
    :class:`~accounting.errors.BudgetExceededError` and nothing is registered
    (``for_rule``: the run's rule, which its reservation depends on under a zcdp
    lifetime). ``lifetime_rule`` (``None``: basic) applies to a new id; a registered id
    with another rule is an error.
    """
    if lifetime_rule is not None and ledger.has_dataset(dataset_id):
        known_rule = ledger.dataset(dataset_id).lifetime_rule
        if known_rule != lifetime_rule:
            raise AlgorithmError(
                f"--lifetime-rule: dataset {dataset_id!r} is already registered with the "
                f"{known_rule} lifetime rule; a registered lifetime never changes (drop "
                "--lifetime-rule)")
    if explicit and ledger.has_dataset(dataset_id):
        known = ledger.dataset(dataset_id).lifetime
        if (known.epsilon_exact, known.delta_exact) != (lifetime.epsilon_exact,
                                                        lifetime.delta_exact):
            raise AlgorithmError(
                f"--lifetime-epsilon/--lifetime-delta: dataset {dataset_id!r} is already "
                f"registered with lifetime (epsilon={float(known.epsilon):g}, "
                f"delta={float(known.delta):g}); a registered lifetime never changes "
                "(drop the lifetime flags)")
    ledger.ensure_dataset(dataset_id, lifetime, relation, description, for_run=for_run,
                          for_rule=for_rule, lifetime_rule=lifetime_rule or "basic")


class CountingRecorder:
    """A :class:`~accounting.entries.RunRecorder` forwarding every call to ``inner`` (the
    ledger run or an in-memory recorder) and counting the entries ``inner`` accepted, by
    mechanism kind (``result.mechanisms``)."""

    def __init__(self, inner: RunRecorder) -> None:
        self.inner = inner
        self.counts: dict[str, int] = {}
        #: ``inner.record_many`` when it has one (checked once: a protocol check is slow)
        self._many = inner if isinstance(inner, _BatchRecorder) else None

    @property
    def run_id(self) -> str:
        return str(self.inner.run_id)

    @property
    def budget(self) -> Budget:
        return self.inner.budget

    @property
    def relation(self) -> Relation:
        return self.inner.relation

    @property
    def rule(self) -> str:
        return str(self.inner.rule)

    def record(self, entry: EntryDraft) -> int:
        seq = int(self.inner.record(entry))  # raises (and counts nothing) on failure
        self._count(entry)
        return seq

    def _count(self, entry: EntryDraft) -> None:
        self.counts[entry.mechanism] = self.counts.get(entry.mechanism, 0) + 1

    def record_many(self, entries: Sequence[EntryDraft]) -> list[int]:
        """``inner.record_many`` (atomic) when it has one, else ``record`` per entry."""
        if self._many is None:
            return [self.record(entry) for entry in entries]
        seqs = [int(s) for s in self._many.record_many(list(entries))]  # raises on failure
        for entry in entries:
            self._count(entry)
        return seqs

    def record_output(self, sequence: int, output: JSONValue) -> None:
        self.inner.record_output(sequence, output)

    def close(self, status: str) -> None:
        self.inner.close(status)


@runtime_checkable
class _BatchRecorder(RunRecorder, Protocol):
    """A recorder with an atomic ``record_many`` (the ledger's run)."""

    def record_many(self, entries: list[EntryDraft]) -> list[int]: ...


@dataclass
class SessionHandle:
    """The run's session and where it is recorded."""

    session: Session
    recorder: CountingRecorder
    target: LedgerTarget = field(default=IN_MEMORY)
    #: The open ledger (``None`` in memory); :meth:`close` closes it once the run is over.
    ledger: LedgerBackend | None = None
    #: The dataset's remaining lifetime ``(epsilon, delta)`` after the run (read by
    #: :meth:`close`; public: a function of declared budgets only).
    remaining: tuple[float, float] | None = None
    #: Under a zcdp lifetime: the dataset's remaining and lifetime rho after the run
    #: (``remaining`` is then the (eps, delta) conversion of the remaining rho).
    remaining_rho: tuple[float, float] | None = None
    #: The lifetime this run registered its (new) dataset id with, and whether the user
    #: declared it (``False``: it defaulted to the run's budget); ``None``: id known.
    registered: tuple[Budget, bool] | None = None

    @property
    def run_id(self) -> str:
        return self.recorder.run_id

    def close(self, status: str) -> None:
        """Close the session's run with ``status``, read the dataset's remaining lifetime,
        then close the ledger connection (never left to the garbage collector: see
        ``accounting.ledger.store._OPEN_FILES``)."""
        try:
            self.session.close(status=status)
            if self.ledger is not None and self.target.dataset_id is not None:
                info = self.ledger.dataset(self.target.dataset_id)
                self.remaining = (float(info.remaining_epsilon), float(info.remaining_delta))
                if info.remaining_rho is not None and info.lifetime_rho is not None:
                    self.remaining_rho = (float(info.remaining_rho), float(info.lifetime_rho))
        finally:
            if self.ledger is not None:
                self.ledger.close()


#: The relations an algorithm supports unless it declares ``relations``.
DEFAULT_RELATIONS: tuple[Relation, ...] = (Relation.REPLACE_ONE,)


def open_session(budget: Budget, rule: str, target: LedgerTarget = IN_MEMORY, *,
                 relation: Relation = Relation.REPLACE_ONE, seed: int | None = None,
                 description: str = "",
                 relations: Sequence[Relation] = DEFAULT_RELATIONS,
                 algorithm: str = "this algorithm") -> SessionHandle:
    """A session for one run: in memory, or recorded in the ledger of ``target``.

    With a ledger, everything checkable without spending is checked before the run is
    reserved, and a failed check writes nothing: the signing key a write needs
    (:meth:`Ledger.check_signing`), the dataset's relation against ``relations`` (the
    relations the algorithm's sensitivities are declared under), the session's
    parameters, and that the run's budget fits the dataset's (remaining or new)
    lifetime. A dataset id the ledger does not know yet is then registered with
    ``target.lifetime`` (default: this run's budget; register it beforehand with
    ``dpcg ledger init`` to declare it explicitly) in the same transaction as the check.
    """
    supported = tuple(Relation.parse(r) for r in relations)
    # the custodian's policy (accounting/ledger/custody.py): --no-ledger, another ledger
    # or another id on a governed dataset are refused before anything is opened
    check_policy(dataset_id=target.dataset_id, ledger=target.path,
                 no_ledger=target.path is None, data_path=target.data_path)
    if target.path is None:
        _check_relation(relation, supported, algorithm, None)
        recorder = CountingRecorder(InMemoryRecorder(budget=budget, rule=rule,
                                                     relation=relation))
        session = Session(budget, rule=rule, relation=relation, recorder=recorder, seed=seed)
        return SessionHandle(session, recorder)
    assert target.dataset_id is not None  # LedgerTarget checks it
    check_dataset_id(target.dataset_id)  # before the file is created
    led = open_ledger(target.path, create=True, signing_key=target.signing_key)
    try:
        # -- pre-flight: nothing below writes until ensure_dataset's check passed.
        # the opened ledger must be the governed one (its id, the custodian's key binding,
        # the dataset registered by the custodian)
        check_policy(dataset_id=target.dataset_id, ledger=target.path, no_ledger=False,
                     data_path=target.data_path, opened=led)
        led.check_signing()
        run_relation = (led.dataset(target.dataset_id).relation
                        if led.has_dataset(target.dataset_id) else relation)
        _check_relation(run_relation, supported, algorithm, target.dataset_id)
        Session(budget, rule=rule, relation=run_relation, seed=seed)  # validation only
        lifetime = budget if target.lifetime is None else target.lifetime
        registered = None if led.has_dataset(target.dataset_id) else (
            lifetime, target.lifetime_explicit)
        register_dataset_if_new(led, target.dataset_id,
                                budget if target.lifetime is None else target.lifetime,
                                run_relation, description, explicit=target.lifetime_explicit,
                                for_run=budget, for_rule=rule,
                                lifetime_rule=target.lifetime_rule)
        counted: list[CountingRecorder] = []

        def count(run: RunRecorder) -> RunRecorder:
            counted.append(CountingRecorder(run))
            return counted[0]

        session = session_for_run(led, target.dataset_id, budget, rule, seed=seed,
                                  description=description, wrap=count)
        recorder = counted[0]
    except BaseException:
        led.close()
        raise
    return SessionHandle(session, recorder, target, led, registered=registered)


def _check_relation(relation: Relation, supported: tuple[Relation, ...], algorithm: str,
                    dataset_id: str | None) -> None:
    if relation in supported:
        return
    where = "" if dataset_id is None else f"dataset {dataset_id!r} is declared under "
    raise AlgorithmError(
        f"relation: {where}the {relation.value} relation, but {algorithm} declares its "
        f"sensitivities under {', '.join(r.value for r in supported)} only; nothing was "
        "reserved (use a dataset id declared under a supported relation)")
