"""Where the ledger lives by default: one stable file per user.

The lifetime budget of a dataset is enforced per (ledger file, dataset id). A default
that depends on the working directory (the old ``./dpcg-ledger.sqlite``) gave a dataset
a fresh lifetime in every directory; :func:`default_ledger_path` gives every run of one
user the same file. See ``docs/ledger.md`` (what the lifetime covers).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from accounting.errors import LedgerError

#: Environment variable overriding the default ledger file.
LEDGER_ENV = "DPCG_LEDGER"
#: File name inside the per-user data directory.
LEDGER_FILE = "ledger.sqlite"


def default_ledger_path(environ: Mapping[str, str] | None = None, *,
                        create_dir: bool = True) -> Path:
    """The ledger file to use when none is given explicitly.

    1. ``$DPCG_LEDGER`` if set and non-empty (``~`` expanded; used as given, its
       directory is not created);
    2. else ``$XDG_DATA_HOME/dpcg/ledger.sqlite`` when ``$XDG_DATA_HOME`` is an absolute
       path (the XDG base-directory rule: relative values are ignored);
    3. else ``~/.local/share/dpcg/ledger.sqlite``.

    For 2 and 3, ``create_dir=True`` creates the ``dpcg`` directory (and missing parents)
    on first use with mode 0700 (only the user can list or open the ledger). The file
    itself is created by :meth:`Ledger.open` with ``create=True``. ``environ`` defaults
    to ``os.environ``. Raises :class:`LedgerError` when no home directory is known or
    the directory cannot be created.
    """
    env = os.environ if environ is None else environ
    explicit = env.get(LEDGER_ENV, "")
    if explicit:
        return Path(explicit).expanduser()
    xdg = env.get("XDG_DATA_HOME", "")
    if xdg and Path(xdg).is_absolute():
        base = Path(xdg)
    else:
        home = env.get("HOME", "")
        if not home:
            try:
                home = str(Path.home())
            except RuntimeError:
                raise LedgerError(
                    "no home directory to put the default ledger in: set $DPCG_LEDGER "
                    "(or $XDG_DATA_HOME) or give the ledger path explicitly") from None
        base = Path(home) / ".local" / "share"
    directory = base / "dpcg"
    if create_dir and not directory.is_dir():
        try:
            directory.parent.mkdir(parents=True, exist_ok=True)
            try:
                directory.mkdir(mode=0o700)
                os.chmod(directory, 0o700)  # exactly 0700, whatever the umask
            except FileExistsError:  # another process created it meanwhile
                pass
        except OSError as exc:
            raise LedgerError(f"cannot create the ledger directory {directory}: {exc}") \
                from None
    return directory / LEDGER_FILE


def resolve_ledger_path(explicit: str | os.PathLike[str] | None,
                        environ: Mapping[str, str] | None = None) -> Path:
    """``explicit`` (a ``--ledger`` flag) if given, else :func:`default_ledger_path`."""
    if explicit is not None and str(explicit):
        return Path(explicit).expanduser()
    return default_ledger_path(environ)
