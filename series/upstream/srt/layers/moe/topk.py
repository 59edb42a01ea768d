"""Top-k expert selection for mixture-of-experts layers.

Routing turns each token's router logits into ``top_k`` expert ids and their weights.  Two
strategies are provided: plain softmax top-k, and the grouped top-k of DeepSeek-style models,
which first restricts every token to its best ``topk_group`` groups of experts.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import NamedTuple

import torch

logger = logging.getLogger(__name__)


@dataclass
class TopKConfig:
    """How a MoE layer selects experts for each token."""

    top_k: int
    use_grouped_topk: bool = False
    num_expert_group: int | None = None
    topk_group: int | None = None
    renormalize: bool = True
    routed_scaling_factor: float | None = None
    correction_bias: torch.Tensor | None = None


class TopKOutput(NamedTuple):
    topk_weights: torch.Tensor
    topk_ids: torch.Tensor
    router_logits: torch.Tensor


def fused_topk(
    hidden_states: torch.Tensor,
    gating_output: torch.Tensor,
    topk: int,
    renormalize: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax over all experts, then the ``topk`` best per token, best first."""
    assert hidden_states.shape[0] == gating_output.shape[0], "token count mismatch"
    scores = torch.softmax(gating_output.float(), dim=-1)
    topk_weights, topk_ids = torch.topk(scores, k=topk, dim=-1, sorted=True)
    if renormalize:
        topk_weights = topk_weights / topk_weights.sum(dim=-1, keepdim=True)
    return topk_weights, topk_ids.to(torch.int32)


def grouped_topk(
    hidden_states: torch.Tensor,
    gating_output: torch.Tensor,
    topk: int,
    renormalize: bool,
    num_expert_group: int,
    topk_group: int,
    correction_bias: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pick the best ``topk_group`` expert groups per token, then ``topk`` experts in them."""
    assert hidden_states.shape[0] == gating_output.shape[0], "token count mismatch"
    num_tokens, num_experts = gating_output.shape
    scores = gating_output.float().sigmoid()
    choice = scores if correction_bias is None else scores + correction_bias.unsqueeze(0)
    group_scores = (
        choice.view(num_tokens, num_expert_group, -1).topk(2, dim=-1).values.sum(dim=-1)
    )
    group_idx = torch.topk(group_scores, k=topk_group, dim=-1, sorted=False).indices
    group_mask = torch.zeros_like(group_scores)
    group_mask.scatter_(1, group_idx, 1)
    score_mask = (
        group_mask.unsqueeze(-1)
        .expand(num_tokens, num_expert_group, num_experts // num_expert_group)
        .reshape(num_tokens, -1)
    )
    masked = choice.masked_fill(~score_mask.bool(), float("-inf"))
    topk_ids = torch.topk(masked, k=topk, dim=-1, sorted=True).indices
    topk_weights = scores.gather(1, topk_ids)
    if renormalize:
        topk_weights = topk_weights / topk_weights.sum(dim=-1, keepdim=True)
    return topk_weights, topk_ids.to(torch.int32)


def select_experts(
    hidden_states: torch.Tensor,
    router_logits: torch.Tensor,
    config: TopKConfig,
) -> TopKOutput:
    """Route every token of ``hidden_states`` to ``config.top_k`` experts."""
    if config.use_grouped_topk:
        assert config.num_expert_group is not None and config.topk_group is not None
        topk_weights, topk_ids = grouped_topk(
            hidden_states,
            router_logits,
            config.top_k,
            config.renormalize,
            config.num_expert_group,
            config.topk_group,
            config.correction_bias,
        )
    else:
        topk_weights, topk_ids = fused_topk(
            hidden_states, router_logits, config.top_k, config.renormalize
        )
    if config.routed_scaling_factor is not None:
        topk_weights = topk_weights * config.routed_scaling_factor
    return TopKOutput(topk_weights, topk_ids, router_logits)


class TopK(torch.nn.Module):
    """Module wrapper so that MoE layers can hold their routing configuration."""

    def __init__(self, config: TopKConfig):
        super().__init__()
        self.config = config

    def forward(self, hidden_states: torch.Tensor, router_logits: torch.Tensor) -> TopKOutput:
        return select_experts(hidden_states, router_logits, self.config)
