"""A real Spark standalone cluster on 127.0.0.1 for the tests: one master and two workers
(1 core, 512m each), started with the daemon scripts shipped inside the ``pyspark``
package, torn down at the end.

The pip ``pyspark`` package ships ``sbin/spark-daemon.sh`` (and ``bin/spark-class``) but not
the ``start-master.sh``/``start-worker.sh`` wrappers of a full Spark distribution; those
wrappers only call ``spark-daemon.sh start <class> <instance> <args>``, which is what this
fixture does. Everything lives in a temporary directory (pid files, logs, work dirs), the
ports are free ports chosen at start, and every process is stopped through its own pid
file.

``JAVA_HOME``: taken from the environment, else the first ``/usr/lib/jvm/java-17*`` (Spark
4 needs Java 17 or 21), else the ``java`` on ``PATH``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


def java_home() -> str | None:
    """A Java 17/21 home for Spark, or None if no Java is found."""
    env = os.environ.get("JAVA_HOME")
    if env and (Path(env) / "bin" / "java").exists():
        return env
    for pattern in ("java-17*", "java-21*", "*17*", "*21*"):
        for cand in sorted(Path("/usr/lib/jvm").glob(pattern)):
            if (cand / "bin" / "java").exists():
                return str(cand)
    java = shutil.which("java")
    if java:
        return str(Path(java).resolve().parent.parent)
    return None


def spark_home() -> str:
    import pyspark

    return str(Path(pyspark.__file__).resolve().parent)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    url: str
    ui: str
    env: dict[str, str]
    home: str


def spark_env(base: Path) -> dict[str, str]:
    """Environment for the daemons and the driver: loopback only, small memory."""
    env = dict(os.environ)
    home = java_home()
    if home is not None:
        env["JAVA_HOME"] = home
    env.update(
        SPARK_HOME=spark_home(),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_MASTER_HOST="127.0.0.1",
        SPARK_PID_DIR=str(base / "pid"),
        SPARK_LOG_DIR=str(base / "log"),
        SPARK_WORKER_DIR=str(base / "work"),
        SPARK_CONF_DIR=str(base / "conf"),
        SPARK_DAEMON_MEMORY="256m",
        SPARK_IDENT_STRING="dpcg-tests",
    )
    for sub in ("pid", "log", "work", "conf"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    return env


def _daemon(env: dict[str, str], action: str, cls: str, instance: int, *args: str) -> None:
    script = Path(env["SPARK_HOME"]) / "sbin" / "spark-daemon.sh"
    subprocess.run(
        ["bash", str(script), action, cls, str(instance), *args],
        env=env,
        check=action == "start",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=120,
    )


def _alive_workers(ui: str) -> int:
    try:
        with urllib.request.urlopen(f"{ui}/json/", timeout=5) as response:
            state = json.loads(response.read().decode())
    except OSError:
        return -1
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


@contextlib.contextmanager
def standalone_cluster(base: Path, workers: int = 2, timeout: float = 120.0) -> Iterator[Cluster]:
    """Start master + ``workers`` workers on 127.0.0.1; stop them all on exit."""
    env = spark_env(base)
    port, ui_port = _free_port(), _free_port()
    url = f"spark://127.0.0.1:{port}"
    ui = f"http://127.0.0.1:{ui_port}"
    started: list[tuple[str, int]] = []
    try:
        _daemon(env, "start", MASTER, 1, "--host", "127.0.0.1", "--port", str(port),
                "--webui-port", str(ui_port))
        started.append((MASTER, 1))
        for k in range(1, workers + 1):
            _daemon(env, "start", WORKER, k, "--host", "127.0.0.1", "--cores", "1",
                    "--memory", "512m", "--webui-port", str(_free_port()),
                    "--work-dir", str(base / "work" / str(k)), url)
            started.append((WORKER, k))
        deadline = time.monotonic() + timeout
        while _alive_workers(ui) < workers:
            if time.monotonic() > deadline:
                logs = "\n".join(
                    p.read_text(errors="replace")[-2000:] for p in (base / "log").glob("*")
                )
                raise RuntimeError(f"the Spark cluster did not come up in {timeout}s:\n{logs}")
            time.sleep(1.0)
        yield Cluster(url, ui, env, env["SPARK_HOME"])
    finally:
        for cls, k in reversed(started):
            _daemon(env, "stop", cls, k)
