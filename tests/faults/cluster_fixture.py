"""A private dask cluster for the fault tests: a real ``dask scheduler`` and two nanny-managed ``dask worker``s.

The workers may be SIGKILLed by a test; their nannies start them again, so the
next test finds two workers (``wait_for_workers``). The shared ``dask_cluster``
fixture of the adversarial suite is never killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from adversarial.harness import free_port


class Cluster:
    """Scheduler address, a monitoring client, and the processes to stop."""

    def __init__(self, base: Path, n_workers: int = 2):
        from distributed import Client

        self.base = base
        port = free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        logs = base / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.procs = [subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port),
             "--dashboard-address", "127.0.0.1:0", "--no-dashboard"],
            cwd=base, env=env, stdout=open(logs / "scheduler.log", "w"), stderr=subprocess.STDOUT)]
        for i in range(n_workers):  # nanny on (the default): a killed worker process is started again
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", self.address, "--nthreads", "1", "--nworkers", "1",
                 "--no-dashboard", "--local-directory", str(base / f"w{i}"), "--name", f"fw{i}"],
                cwd=base, env=env, stdout=open(logs / f"worker{i}.log", "w"), stderr=subprocess.STDOUT))
        deadline = time.time() + 90
        while True:
            try:
                self.client = Client(self.address, timeout="5s", set_as_default=False)
                break
            except OSError:
                if time.time() > deadline:
                    self.close()
                    raise
                time.sleep(0.5)
        self.n_workers = n_workers
        self.ready()

    def ready(self) -> None:
        """Wait until every worker is (back) up."""
        self.client.wait_for_workers(self.n_workers, timeout=60)

    def task_states(self) -> tuple[int, int]:
        """(tasks in memory, tasks processing) on the scheduler right now."""
        def count(dask_scheduler):
            states = [ts.state for ts in dask_scheduler.tasks.values()]
            return states.count("memory"), states.count("processing")

        return tuple(self.client.run_on_scheduler(count))

    def worker_pids(self) -> dict[str, int]:
        return self.client.run(os.getpid)

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            try:
                client.shutdown()  # scheduler, nannies and workers stop together (faster than signals)
            except Exception:  # noqa: BLE001 - already gone: the signals below finish the job
                client.close()
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


class Killer(threading.Thread):
    """SIGKILL one worker process once a pass has finished ``after`` tasks and still has tasks running."""

    def __init__(self, cluster: Cluster, after: int = 1, timeout: float = 60):
        super().__init__(daemon=True)
        self.cluster, self.after, self.timeout = cluster, after, timeout
        self.killed_pid: int | None = None
        self.state_at_kill: tuple[int, int] | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        pids = self.cluster.worker_pids()
        deadline = time.time() + self.timeout
        while not self.stop.is_set() and time.time() < deadline:
            done, running = self.cluster.task_states()
            if done >= self.after and running >= 1:
                processing = self.cluster.client.processing()
                busy = [w for w, keys in processing.items() if keys and w in pids]
                if busy:
                    self.state_at_kill = (done, running)
                    self.killed_pid = pids[busy[0]]
                    os.kill(self.killed_pid, signal.SIGKILL)
                    return
            time.sleep(0.01)
