"""The in-process engine: one scheduler process per GPU, driven from the caller's process."""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
from dataclasses import dataclass, field

from srt.managers.scheduler import run_scheduler_process
from srt.utils import configure_logger

logger = logging.getLogger(__name__)

# Variables every worker needs, copied from the launching process when set.
_WORKER_ENV_PASSTHROUGH = ("PATH", "HOME", "PYTHONPATH", "SRT_LOG_LEVEL", "HF_HOME")


@dataclass
class ServerArgs:
    model_path: str
    tp_size: int = 1
    base_gpu_id: int = 0
    dist_init_addr: str = "127.0.0.1:29500"
    mem_fraction_static: float = 0.85
    speculative_algorithm: str | None = None
    extra_env: dict[str, str] = field(default_factory=dict)


def _worker_env(server_args: ServerArgs, gpu_id: int) -> dict[str, str]:
    """Environment for the scheduler process on ``gpu_id``.

    Workers start from a small, explicit environment instead of inheriting everything, so
    that a stray variable in the launching shell cannot change kernels or memory limits.
    """
    env = {name: os.environ[name] for name in _WORKER_ENV_PASSTHROUGH if name in os.environ}
    env["CUDA_VISIBLE_DEVICES"] = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    env["SRT_WORKER_GPU_ID"] = str(gpu_id)
    env.update(server_args.extra_env)
    return env


def _run_with_env(env: dict[str, str], *args) -> None:
    os.environ.clear()
    os.environ.update(env)
    configure_logger(prefix=f" TP{args[2]}")
    run_scheduler_process(*args)


class Engine:
    """Launch the schedulers and hand requests to them."""

    def __init__(self, server_args: ServerArgs):
        self.server_args = server_args
        self.procs: list[mp.Process] = []
        self.ctx = mp.get_context("spawn")
        self._launch_schedulers()

    def _launch_schedulers(self) -> None:
        args = self.server_args
        dist_init_method = f"tcp://{args.dist_init_addr}"
        readers = []
        for tp_rank in range(args.tp_size):
            gpu_id = args.base_gpu_id + tp_rank
            reader, writer = self.ctx.Pipe(duplex=False)
            proc = self.ctx.Process(
                target=_run_with_env,
                args=(_worker_env(args, gpu_id), args, gpu_id, tp_rank, dist_init_method, writer),
                daemon=True,
            )
            proc.start()
            self.procs.append(proc)
            readers.append(reader)
        for tp_rank, reader in enumerate(readers):
            status = reader.recv()
            if status.get("status") != "ready":
                self.shutdown()
                raise RuntimeError(f"Scheduler on tp_rank {tp_rank} failed to start: {status}")
        logger.info("All %d schedulers are ready.", args.tp_size)

    def shutdown(self) -> None:
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
        for proc in self.procs:
            proc.join(timeout=10)
        self.procs.clear()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
