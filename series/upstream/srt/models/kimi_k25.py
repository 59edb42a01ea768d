"""Kimi-K2.5: a vision-language model on a DeepSeek-V3 style text backbone.

The multimodal wrapper owns a vision tower, a projector that maps image features into the
text embedding space, and the language model that does the decoding.  Everything that is
about text generation lives in ``self.language_model``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import torch
from srt.models.deepseek_v2 import DeepseekV3ForCausalLM
from torch import nn

logger = logging.getLogger(__name__)


class KimiK25VisionProjector(nn.Module):
    """Two-layer MLP from vision features to the text hidden size."""

    def __init__(self, vision_hidden_size: int, text_hidden_size: int):
        super().__init__()
        self.norm = nn.LayerNorm(vision_hidden_size)
        self.fc1 = nn.Linear(vision_hidden_size, text_hidden_size)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(text_hidden_size, text_hidden_size)

    def forward(self, image_features: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(self.norm(image_features))))


class KimiK25ForConditionalGeneration(nn.Module):
    """Entry class for Kimi-K2.5 checkpoints."""

    def __init__(self, config, tp_group=None, quant_config=None, prefix: str = ""):
        super().__init__()
        self.config = config
        self.quant_config = quant_config
        # The vision tower is built by the multimodal processor on first use.
        self.vision_tower = None
        self.mm_projector = KimiK25VisionProjector(
            config.vision_config.hidden_size, config.text_config.hidden_size
        )
        self.language_model = DeepseekV3ForCausalLM(
            config.text_config,
            tp_group=tp_group,
            quant_config=quant_config,
            prefix=f"{prefix}language_model.",
        )

    def get_input_embeddings(self) -> nn.Embedding:
        return self.language_model.model.embed_tokens

    def embed_multimodal(self, input_ids: torch.Tensor, forward_batch) -> torch.Tensor:
        """Text embeddings with the image placeholder tokens replaced by image features."""
        embeds = self.get_input_embeddings()(input_ids)
        for item in forward_batch.mm_items():
            features = self.mm_projector(self.vision_tower(item.pixel_values))
            embeds[item.offset : item.offset + features.shape[0]] = features.to(embeds.dtype)
        return embeds

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        if input_embeds is None and forward_batch.contains_mm_inputs():
            input_embeds = self.embed_multimodal(input_ids, forward_batch)
        return self.language_model(input_ids, positions, forward_batch, input_embeds)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Route checkpoint tensors to the projector or the language model."""
        projector = dict(self.mm_projector.named_parameters())
        text_weights = []
        for name, tensor in weights:
            if name.startswith("mm_projector."):
                projector[name.removeprefix("mm_projector.")].data.copy_(tensor)
            elif name.startswith("vision_tower."):
                continue  # loaded by the multimodal processor
            else:
                text_weights.append((name.removeprefix("language_model."), tensor))
        self.language_model.load_weights(text_weights)


EntryClass = [KimiK25ForConditionalGeneration]
