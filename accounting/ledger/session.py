"""Glue between the ledger and :class:`accounting.session.Session`."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from accounting.costs import Budget
from accounting.errors import AccountingError

if TYPE_CHECKING:
    from accounting.ledger.store import Ledger


def session_for_run(ledger: Ledger, dataset_id: str, budget: Budget, rule: str,
                    seed: int | None = None, description: str = "",
                    store_outputs: bool = False) -> Any:
    """Reserve ``budget`` for a new run of ``dataset_id`` and return a session recording it.

    The session's arguments are validated first (a throw-away session without a
    recorder), so bad input reserves nothing. The run uses the dataset's relation.
    The run is marked seed-explicit when ``seed`` is given.
    """
    session_cls = importlib.import_module("accounting.session").Session
    relation = ledger.dataset(dataset_id).relation
    session_cls(budget, rule=rule, relation=relation, seed=seed)  # validation only
    run = ledger.open_run(dataset_id, budget, rule, seed_explicit=seed is not None,
                          description=description)
    try:
        return session_cls(budget, rule=rule, relation=relation, recorder=run, seed=seed,
                           store_outputs=store_outputs)
    except AccountingError:
        run.close("error")
        raise
