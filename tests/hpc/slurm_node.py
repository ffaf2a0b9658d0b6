"""Start and stop a private single-node SLURM cluster (slurmctld + slurmd on this machine) for tests and benchmarks.

Standard library only. Needs root, Debian's ``slurm-wlm`` and ``munge``
(``scripts/setup_slurm.sh`` installs them). Everything it makes lives in one
temporary folder: ``slurm.conf`` and ``cgroup.conf`` (found through the
``SLURM_CONF`` environment variable, which :func:`start` returns), the
controller's state, slurmd's spool, the logs and pid files. The daemons listen
on free ports, so a system SLURM (if any) is left alone. munged is started as
the ``munge`` user only if none is running, and stopped again (by its pid) by
:func:`stop` only if this module started it.

Configuration, kept to what a sandbox allows: ``ProctrackType=proctrack/linuxproc``,
``TaskPlugin=task/none``, no accounting, ``SelectType=select/cons_tres`` by core,
one node ``localhost`` with this machine's CPUs, one default partition ``debug``.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

#: Binaries a single-node cluster needs.
BINARIES = ("slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo", "munged")

#: The partition jobs go to.
PARTITION = "debug"


def missing_binaries() -> list[str]:
    """The binaries of :data:`BINARIES` not found on PATH (``/usr/sbin`` searched too)."""
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return [name for name in BINARIES if shutil.which(name, path=path) is None]


def _which(name: str) -> str:
    found = shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    if found is None:
        raise RuntimeError(f"{name} is not installed; run scripts/setup_slurm.sh")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_MUNGE_SOCKET = "/run/munge/munge.socket.2"


def _munge_running() -> bool:
    """A munged answers on the default socket (one that is shutting down has removed it, or soon will)."""
    if not os.path.exists(_MUNGE_SOCKET):
        return False
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(_MUNGE_SOCKET)
            return True
        except OSError:
            return False


def _cgroup_mounted() -> bool:
    try:
        with open("/proc/mounts") as fh:
            return any(line.split()[2] in ("cgroup", "cgroup2") for line in fh if len(line.split()) > 2)
    except OSError:
        return False


@dataclass
class SlurmNode:
    """A running single-node SLURM cluster; :meth:`env` gives the environment its commands need."""

    folder: str
    conf: str
    munge_pid: int | None = None
    pids: dict = field(default_factory=dict)

    def env(self) -> dict:
        """``os.environ`` plus ``SLURM_CONF`` (and /usr/sbin on PATH)."""
        env = dict(os.environ)
        env["SLURM_CONF"] = self.conf
        return env

    def log(self, name: str = "slurmctld") -> str:
        """The text of a daemon's log file (``slurmctld`` or ``slurmd``), for failure messages."""
        try:
            with open(os.path.join(self.folder, f"{name}.log"), errors="replace") as fh:
                return fh.read()[-4000:]
        except OSError:
            return ""


def _write_conf(folder: str) -> str:
    host = socket.gethostname().split(".")[0]
    cpus = os.cpu_count() or 1
    conf = os.path.join(folder, "slurm.conf")
    lines = [
        "ClusterName=widemltest",
        f"SlurmctldHost={host}(127.0.0.1)",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"SlurmctldPort={_free_port()}",
        f"SlurmdPort={_free_port()}",
        f"StateSaveLocation={folder}/state",
        f"SlurmdSpoolDir={folder}/spool",
        f"SlurmctldPidFile={folder}/slurmctld.pid",
        f"SlurmdPidFile={folder}/slurmd.pid",
        f"SlurmctldLogFile={folder}/slurmctld.log",
        f"SlurmdLogFile={folder}/slurmd.log",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "SchedulerType=sched/builtin",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ReturnToService=2",
        "SlurmctldTimeout=30",
        "SlurmdTimeout=30",
        "InactiveLimit=0",
        "KillWait=2",
        "MinJobAge=5",
        f"NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=4096 State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4",
    ]
    with open(conf, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    # slurmd reads cgroup.conf beside slurm.conf; v1 is the plugin that loads without a unified hierarchy
    with open(os.path.join(folder, "cgroup.conf"), "w") as fh:
        fh.write("CgroupPlugin=cgroup/v1\n" if _cgroup_mounted() else "CgroupPlugin=cgroup/v1\nIgnoreSystemd=yes\n")
    return conf


_MUNGE_PIDFILE = "/run/munge/munged.pid"


def _start_munge() -> int | None:
    """Start munged as the munge user unless one runs; the pid of the munged this call started, else None."""
    if _munge_running():
        return None
    os.makedirs("/run/munge", exist_ok=True)
    shutil.chown("/run/munge", "munge", "munge")
    os.chmod("/run/munge", 0o755)
    subprocess.run(["runuser", "-u", "munge", "--", _which("munged"), f"--pid-file={_MUNGE_PIDFILE}"], check=True,
                   capture_output=True, timeout=20)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(_MUNGE_PIDFILE) as fh:
                return int(fh.read().strip())
        except (OSError, ValueError):
            time.sleep(0.1)
    raise RuntimeError("munged started but wrote no pid file")


def _wait(predicate, timeout: float, what: str, node: SlurmNode) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} within {timeout:g} s; slurmctld log:\n{node.log('slurmctld')}\nslurmd log:\n{node.log('slurmd')}")


def _node_idle(node: SlurmNode) -> bool:
    out = subprocess.run([_which("sinfo"), "-h", "-N", "-o", "%T"], env=node.env(), capture_output=True, text=True)
    return out.returncode == 0 and out.stdout.strip().rstrip("*") in ("idle", "mixed", "allocated")


def start(timeout: float = 30.0) -> SlurmNode:
    """Start munged (if needed), slurmctld and ``slurmd -N localhost`` on a fresh config; wait until the node is idle.

    Returns
    -------
    SlurmNode
        Pass ``node.env()`` to anything that runs SLURM commands.
    """
    folder = tempfile.mkdtemp(prefix="wideml-slurm-")
    for sub in ("state", "spool"):
        os.makedirs(os.path.join(folder, sub))
    node = SlurmNode(folder=folder, conf=_write_conf(folder))
    try:
        node.munge_pid = _start_munge()
        env = node.env()
        ctld = subprocess.Popen([_which("slurmctld"), "-D", "-i", "-f", node.conf], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        node.pids["slurmctld"] = ctld
        slurmd = subprocess.Popen([_which("slurmd"), "-D", "-N", "localhost", "-f", node.conf], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        node.pids["slurmd"] = slurmd
        _wait(lambda: _node_idle(node), timeout, "the SLURM node did not come up", node)
    except BaseException:
        stop(node)
        raise
    return node


def cancel_all(node: SlurmNode) -> None:
    """Cancel every job of the private cluster."""
    subprocess.run([_which("scancel"), "--full", "-u", "root"], env=node.env(), capture_output=True, timeout=20)


def jobs(node: SlurmNode) -> list[str]:
    """The job ids the private cluster still knows as pending or running."""
    out = subprocess.run([_which("squeue"), "-h", "-t", "PD,R,CG", "-o", "%i"], env=node.env(), capture_output=True,
                         text=True, timeout=20)
    return out.stdout.split()


def stop(node: SlurmNode) -> None:
    """Cancel the jobs, stop slurmd and slurmctld (and munged if :func:`start` started it), remove the folder."""
    try:
        if node.pids:
            try:
                cancel_all(node)
            except (OSError, subprocess.SubprocessError, RuntimeError):
                pass
        for name in ("slurmd", "slurmctld"):
            proc = node.pids.get(name)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if node.munge_pid is not None:  # only the munged start() started, by its pid
            try:
                os.kill(node.munge_pid, signal.SIGTERM)
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:  # gone before the next start() looks for a munged
                    os.kill(node.munge_pid, 0)
                    time.sleep(0.1)
            except OSError:
                pass
    finally:
        shutil.rmtree(node.folder, ignore_errors=True)
