"""FlashInfer backend for multi-head latent attention (MLA).

The KV cache of an MLA model stores one compressed vector per token
(``kv_lora_rank + qk_rope_head_dim`` values) in a paged pool.  For every batch the backend
builds the page table (``kv_indptr``/``kv_indices``) and runs FlashInfer's MLA kernels on
the pool, reading only the pages the batch's requests own.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

logger = logging.getLogger(__name__)


@dataclass
class MLAForwardMetadata:
    """Page table of one batch, shared by all layers of a forward pass."""

    qo_indptr: torch.Tensor
    kv_indptr: torch.Tensor
    kv_indices: torch.Tensor
    kv_lens: torch.Tensor


class FlashInferMLAAttnBackend:
    """Attention backend for DeepSeek-style MLA models on FlashInfer."""

    def __init__(self, model_runner, kv_indptr_buf: torch.Tensor | None = None):
        config = model_runner.model_config
        self.device = model_runner.device
        self.num_local_heads = config.num_attention_heads // model_runner.tp_size
        self.kv_lora_rank = config.kv_lora_rank
        self.qk_rope_head_dim = config.qk_rope_head_dim
        self.scaling = config.scaling
        self.kv_cache_dtype = model_runner.kv_cache_dtype
        self.max_bs = model_runner.req_to_token_pool.size
        if kv_indptr_buf is None:
            kv_indptr_buf = torch.zeros(self.max_bs + 1, dtype=torch.int32, device=self.device)
        self.kv_indptr = kv_indptr_buf
        self.workspace = torch.empty(128 * 1024 * 1024, dtype=torch.uint8, device=self.device)
        self.decode_wrapper = model_runner.flashinfer.BatchMLAPagedAttentionWrapper(
            self.workspace, backend="auto"
        )
        self.forward_metadata: MLAForwardMetadata | None = None

    def init_forward_metadata(self, forward_batch) -> None:
        """Build the page table for ``forward_batch`` from the request-to-token map."""
        bs = forward_batch.batch_size
        kv_lens = forward_batch.seq_lens.to(torch.int32)
        kv_indptr = self.kv_indptr[: bs + 1]
        kv_indptr[1:] = torch.cumsum(kv_lens, dim=0)
        kv_indices = forward_batch.req_to_token_pool.gather(
            forward_batch.req_pool_indices, kv_lens, int(kv_indptr[-1])
        )
        qo_indptr = forward_batch.extend_start_loc_with_end()
        self.forward_metadata = MLAForwardMetadata(qo_indptr, kv_indptr, kv_indices, kv_lens)

    def _plan(self, q: torch.Tensor, kv_dtype: torch.dtype, causal: bool) -> None:
        meta = self.forward_metadata
        self.decode_wrapper.plan(
            meta.qo_indptr,
            meta.kv_indptr,
            meta.kv_indices,
            meta.kv_lens,
            self.num_local_heads,
            self.kv_lora_rank,
            self.qk_rope_head_dim,
            1,
            causal,
            self.scaling,
            q.dtype,
            kv_dtype,
        )

    def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache: bool = True):
        """Prefill: attend from the new tokens to the cached prefix and to themselves."""
        pool = forward_batch.token_to_kv_pool
        if save_kv_cache:
            pool.set_kv_buffer(layer, forward_batch.out_cache_loc, k, v)
        k_buffer = pool.get_key_buffer(layer.layer_id).to(q.dtype)
        self._plan(q, k_buffer.dtype, causal=True)
        q_nope, q_rope = q.split([self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        ckv, kpe = k_buffer.split([self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        out = self.decode_wrapper.run(q_nope, q_rope, ckv, kpe)
        return out.view(-1, self.num_local_heads * self.kv_lora_rank)

    def forward_decode(self, q, k, v, layer, forward_batch, save_kv_cache: bool = True):
        """Decode: one new token per request attends to its whole cached context."""
        pool = forward_batch.token_to_kv_pool
        if save_kv_cache:
            pool.set_kv_buffer(layer, forward_batch.out_cache_loc, k, v)
        k_buffer = pool.get_key_buffer(layer.layer_id).to(q.dtype)
        self._plan(q, k_buffer.dtype, causal=False)
        q = q.view(-1, self.num_local_heads, self.kv_lora_rank + self.qk_rope_head_dim)
        q_nope, q_rope = q.split([self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        ckv, kpe = k_buffer.split([self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        out = self.decode_wrapper.run(q_nope, q_rope, ckv, kpe)
        return out.view(-1, self.num_local_heads * self.kv_lora_rank)
