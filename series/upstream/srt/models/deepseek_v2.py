"""DeepSeek-V2 and DeepSeek-V3 decoder models.

Both use multi-head latent attention (MLA) and a mixture-of-experts MLP in all but the first
``first_k_dense_replace`` layers.  V3 only differs in its routing (sigmoid scores with a
correction bias), which lives in the MoE layer, so it shares the classes below.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import torch
from srt.layers.communicator import LayerCommunicator, LayerCommunicatorConfig
from srt.layers.layernorm import RMSNorm
from srt.layers.moe.fused_moe import FusedMoE
from srt.layers.radix_attention import MLAAttention
from torch import nn

logger = logging.getLogger(__name__)


class DeepseekV2MLP(nn.Module):
    """Dense SwiGLU MLP used by the first layers and by the shared experts."""

    def __init__(self, hidden_size: int, intermediate_size: int):
        super().__init__()
        self.gate_up_proj = nn.Linear(hidden_size, 2 * intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(nn.functional.silu(gate) * up)


class DeepseekV2DecoderLayer(nn.Module):
    """One decoder layer: MLA attention followed by a dense MLP or a MoE block."""

    def __init__(self, config, layer_id: int, tp_group, quant_config=None):
        super().__init__()
        self.layer_id = layer_id
        self.self_attn = MLAAttention(config, layer_id=layer_id, quant_config=quant_config)
        if layer_id >= config.first_k_dense_replace:
            self.mlp = FusedMoE(config, layer_id=layer_id, quant_config=quant_config)
        else:
            self.mlp = DeepseekV2MLP(config.hidden_size, config.intermediate_size)
        self.input_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.communicator = LayerCommunicator(
            LayerCommunicatorConfig(tp_size=tp_group.world_size, hidden_size=config.hidden_size),
            tp_group,
            layer_id,
        )

    def forward(self, positions, hidden_states, forward_batch, residual):
        if residual is None:
            residual = hidden_states
            hidden_states = self.input_layernorm(hidden_states)
        else:
            hidden_states, residual = self.input_layernorm(hidden_states, residual)
        hidden_states = self.self_attn(positions, hidden_states, forward_batch)
        hidden_states, residual = self.communicator.postprocess_attention(
            hidden_states, residual, self.post_attention_layernorm
        )
        hidden_states = self.communicator.postprocess_mlp(self.mlp(hidden_states))
        return hidden_states, residual


class DeepseekV2Model(nn.Module):
    """Embedding, decoder layers and final norm."""

    def __init__(self, config, tp_group, quant_config=None):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            DeepseekV2DecoderLayer(config, i, tp_group, quant_config)
            for i in range(config.num_hidden_layers)
        )
        self.start_layer = 0
        self.end_layer = config.num_hidden_layers
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        # Layer ids whose input hidden states EAGLE-3 draft models read.
        self.layers_to_capture: list[int] = []

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states = self.embed_tokens(input_ids) if input_embeds is None else input_embeds
        residual = None

        aux_hidden_states = []
        for i in range(self.start_layer, self.end_layer):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual)
            layer = self.layers[i]
            hidden_states, residual = layer(
                positions, hidden_states, forward_batch, residual
            )

        hidden_states, _ = self.norm(hidden_states, residual)
        if not aux_hidden_states:
            return hidden_states
        return hidden_states, aux_hidden_states


class DeepseekV2ForCausalLM(nn.Module):
    """DeepSeek-V2 with its language-model head."""

    def __init__(self, config, tp_group=None, quant_config=None, prefix: str = ""):
        super().__init__()
        self.config = config
        self.quant_config = quant_config
        self.prefix = prefix
        self.model = DeepseekV2Model(config, tp_group, quant_config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.capture_aux_hidden_states = False

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        out = self.model(input_ids, positions, forward_batch, input_embeds)
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = out
        else:
            hidden_states = out
        logits = self.lm_head(hidden_states)
        return forward_batch.make_output(logits, hidden_states, aux_hidden_states)

    def get_embed_and_head(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Weights an EAGLE draft model shares with its target model."""
        return self.model.embed_tokens.weight, self.lm_head.weight

    def set_embed_and_head(self, embed: torch.Tensor, head: torch.Tensor) -> None:
        del self.model.embed_tokens.weight
        del self.lm_head.weight
        self.model.embed_tokens.weight = embed
        self.lm_head.weight = head
        torch.cuda.empty_cache()

    def set_eagle3_layers_to_capture(self, layer_ids: list[int] | None = None) -> None:
        """Make forward() also return the hidden states EAGLE-3 drafts from."""
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = list(layer_ids)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        params = dict(self.named_parameters())
        for name, loaded in weights:
            if "rotary_emb.inv_freq" in name:
                continue
            param = params.get(name)
            if param is None:
                logger.debug("Skipping weight %s: no such parameter", name)
                continue
            loader = getattr(param, "weight_loader", None)
            if loader is not None:
                loader(param, loaded)
            else:
                param.data.copy_(loaded)


class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):
    """DeepSeek-V3: same module structure, different routing inside FusedMoE."""


EntryClass = [DeepseekV2ForCausalLM, DeepseekV3ForCausalLM]
