"""The per-GPU scheduler: receives requests, forms batches and runs the model."""

from __future__ import annotations

import logging
import os
import time
from collections import deque

from srt.distributed import get_tp_group, init_distributed_environment
from srt.managers.schedule_batch import Req, ScheduleBatch
from srt.model_executor.model_runner import ModelRunner

logger = logging.getLogger(__name__)


class Scheduler:
    """Owns one tensor-parallel rank: its process group, model runner and request queue."""

    def __init__(self, server_args, gpu_id: int, tp_rank: int, dist_init_method: str):
        self.server_args = server_args
        self.gpu_id = gpu_id
        self.tp_rank = tp_rank
        self.tp_size = server_args.tp_size
        self.dist_init_method = dist_init_method
        self.waiting_queue: deque[Req] = deque()
        self.running_batch: ScheduleBatch | None = None
        self.forward_ct = 0

        self.init_distributed()
        self.model_runner = ModelRunner(server_args, gpu_id, tp_rank, self.tp_group)
        self.max_running_requests = self.model_runner.max_running_requests

    def init_distributed(self) -> None:
        """Join the tensor-parallel process group and keep its handle."""
        logger.info("Init torch distributed on tp_rank=%d.", self.tp_rank)
        init_distributed_environment(
            backend="nccl",
            world_size=self.tp_size,
            rank=self.tp_rank,
            local_rank=self.gpu_id,
            distributed_init_method=self.dist_init_method,
        )
        self.tp_group = get_tp_group()

    def add_request(self, req: Req) -> None:
        self.waiting_queue.append(req)

    def get_next_batch(self) -> ScheduleBatch | None:
        """Admit waiting requests into the running batch while there is room."""
        if self.running_batch is not None and self.running_batch.is_full():
            return self.running_batch
        admitted = []
        budget = self.max_running_requests - (
            len(self.running_batch.reqs) if self.running_batch else 0
        )
        while self.waiting_queue and len(admitted) < budget:
            admitted.append(self.waiting_queue.popleft())
        if admitted:
            prefill = ScheduleBatch.init_new(admitted, self.model_runner)
            prefill.prepare_for_extend()
            return prefill
        if self.running_batch is not None:
            self.running_batch.prepare_for_decode()
        return self.running_batch

    def run_batch(self, batch: ScheduleBatch):
        self.forward_ct += 1
        return self.model_runner.forward(batch)

    def process_batch_result(self, batch: ScheduleBatch, result) -> None:
        batch.append_outputs(result)
        finished = [req for req in batch.reqs if req.finished()]
        for req in finished:
            req.send_output()
        batch.filter_finished()
        if batch.is_extend():
            if self.running_batch is None:
                self.running_batch = batch
            else:
                self.running_batch.merge(batch)
        if self.running_batch is not None and self.running_batch.is_empty():
            self.running_batch = None

    def event_loop(self, recv_requests) -> None:
        """Receive, schedule, run; forever."""
        while True:
            for req in recv_requests():
                self.add_request(req)
            batch = self.get_next_batch()
            if batch is None:
                time.sleep(0.001)
                continue
            self.process_batch_result(batch, self.run_batch(batch))


def run_scheduler_process(server_args, gpu_id, tp_rank, dist_init_method, pipe_writer) -> None:
    """Entry point of a scheduler process."""
    logger.info("Scheduler process %d started (pid %d).", tp_rank, os.getpid())
    try:
        scheduler = Scheduler(server_args, gpu_id, tp_rank, dist_init_method)
    except Exception as exc:
        pipe_writer.send({"status": "error", "error": repr(exc)})
        raise
    pipe_writer.send({"status": "ready", "max_running_requests": scheduler.max_running_requests})
    scheduler.event_loop(scheduler.model_runner.recv_requests)
