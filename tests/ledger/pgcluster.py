"""A throwaway PostgreSQL cluster for the ledger tests (Debian's binaries, never a mock).

:class:`Cluster` runs ``initdb`` into a fresh temporary directory and ``pg_ctl start``
on 127.0.0.1 and a free port (Unix socket in the same directory), with ``trust``
authentication on loopback (privileges, not passwords, are what the tests check) and
``fsync`` off (the server is thrown away). PostgreSQL refuses to run as root, so when
the tests run as root (CI) the server runs as the ``postgres`` user that Debian's
package creates (``runuser``); otherwise as the current user. The binaries come from
``$DPCG_PG_BIN`` or the newest ``/usr/lib/postgresql/*/bin``; :func:`pg_bin` returns
``None`` when there are none (the tests then skip, saying why).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

ADMIN = "dpcg_admin"


def pg_bin() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl`` (``None``: not installed)."""
    env = os.environ.get("DPCG_PG_BIN")
    candidates = [Path(env)] if env else sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0, reverse=True)
    for d in candidates:
        if (d / "initdb").is_file() and (d / "pg_ctl").is_file():
            return d
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """One running cluster; :meth:`stop` shuts it down and removes its directory."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="dpcg-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        self._run([str(bindir / "initdb"), "-D", str(self.data), "-U", ADMIN, "-A", "trust",
                   "-E", "UTF8", "--no-sync", "--no-instructions"])
        opts = (f"-h 127.0.0.1 -p {self.port} -k {self.root} -F "
                "-c max_connections=80 -c shared_buffers=32MB")
        self._run([str(bindir / "pg_ctl"), "-D", str(self.data), "-l",
                   str(self.root / "server.log"), "-w", "-t", "60", "-o", opts, "start"])

    def _run(self, cmd: list[str]) -> None:
        proc = subprocess.run([*self._as, *cmd], capture_output=True, text=True, check=False,
                              timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"{cmd[0]} failed: {proc.stdout}\n{proc.stderr}")

    def url(self, database: str = "postgres", user: str = ADMIN) -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database; returns its name."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def stop(self) -> None:
        try:
            self._run([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                       "-w", "stop"])
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
