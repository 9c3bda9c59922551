"""The layer shapes of the released checkpoint (google/diffusiongemma-26B-A4B-it), without its weights.

Used to price the real model's memory at each precision and, on a lent GPU, to time a random
model built with its shapes but fewer layers (``tools/device_quantize.sh``). The numbers are
its config.json's: 30 layers of width 2816, 128 experts of which 8 are active, 256-token canvas.
"""

from __future__ import annotations

LAYERS = 30
SLIDING_PER_FULL = 5  # five sliding-window layers, then one full-attention layer


def released_config(num_layers: int = LAYERS, num_experts: int = 128):
    """A DiffusionGemma config with the 26B-A4B checkpoint's shapes, ``num_layers`` layers and
    ``num_experts`` experts per layer (fewer only for a dry run on a small machine)."""
    from transformers import DiffusionGemmaConfig, DiffusionGemmaTextConfig, Gemma4VisionConfig

    layer_types = [
        "full_attention" if (index + 1) % (SLIDING_PER_FULL + 1) == 0 else "sliding_attention"
        for index in range(num_layers)
    ]
    layer_types[-1] = "full_attention"
    text = DiffusionGemmaTextConfig(
        vocab_size=262_144,
        hidden_size=2816,
        intermediate_size=2112,
        num_hidden_layers=num_layers,
        num_attention_heads=16,
        num_key_value_heads=8,
        num_global_key_value_heads=2,
        head_dim=256,
        global_head_dim=512,
        sliding_window=1024,
        max_position_embeddings=262_144,
        layer_types=layer_types,
        num_experts=num_experts,
        top_k_experts=min(8, num_experts),
        moe_intermediate_size=704,
    )
    return DiffusionGemmaConfig(text_config=text, vision_config=Gemma4VisionConfig(), canvas_length=256)
