"""Communication between attention and MoE/MLP blocks under tensor parallelism.

Each decoder layer all-reduces its attention output across the tensor-parallel group before
the residual add and the next RMSNorm.  On recent GPUs the all-reduce, residual add and norm
can run as one fused kernel (FlashInfer's ``trtllm_allreduce_fusion``), which saves a round
trip through global memory per layer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch
from srt.utils import get_bool_env_var, get_device_sm

logger = logging.getLogger(__name__)

# Compute capabilities for which the fused all-reduce + residual + RMSNorm kernel is built.
_FUSED_ALLREDUCE_SM_VERSIONS = (90, 100)

# Largest batch (in tokens) for which the fused kernel beats the unfused path.
_FUSED_ALLREDUCE_MAX_TOKENS = 2048


@dataclass
class LayerCommunicatorConfig:
    tp_size: int
    hidden_size: int
    enable_fused_allreduce: bool = True


def fused_allreduce_supported() -> bool:
    """Whether this GPU can use the fused all-reduce + RMSNorm kernel."""
    if get_bool_env_var("SRT_DISABLE_FUSED_ALLREDUCE"):
        return False
    return get_device_sm() in _FUSED_ALLREDUCE_SM_VERSIONS


class LayerCommunicator:
    """Moves hidden states between the attention and the MLP part of one decoder layer."""

    def __init__(self, config: LayerCommunicatorConfig, tp_group, layer_id: int):
        self.config = config
        self.tp_group = tp_group
        self.layer_id = layer_id
        self.use_fused = (
            config.enable_fused_allreduce and config.tp_size > 1 and fused_allreduce_supported()
        )
        if layer_id == 0:
            logger.info("Fused all-reduce + RMSNorm: %s", "on" if self.use_fused else "off")

    def postprocess_attention(
        self,
        hidden_states: torch.Tensor,
        residual: torch.Tensor,
        norm,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """All-reduce the attention output, add the residual and apply ``norm``."""
        if self.config.tp_size == 1:
            return norm(hidden_states, residual)
        if self.use_fused and hidden_states.shape[0] <= _FUSED_ALLREDUCE_MAX_TOKENS:
            return self.tp_group.fused_allreduce_residual_rmsnorm(
                hidden_states, residual, norm.weight, norm.variance_epsilon
            )
        hidden_states = self.tp_group.all_reduce(hidden_states)
        return norm(hidden_states, residual)

    def postprocess_mlp(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """All-reduce the output of the MLP or MoE block."""
        if self.config.tp_size == 1:
            return hidden_states
        return self.tp_group.all_reduce(hidden_states)
