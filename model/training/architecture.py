"""Small DiffusionGemma configurations for the embedded model and the tests.

The released checkpoints are 26B mixture-of-experts models; ours are the same class scaled
down. The class always builds a vision tower, so it gets the smallest one that validates.
MoE is required by the config; one expert with top-1 routing makes it a plain MLP in cost.
"""

from __future__ import annotations

from transformers import DiffusionGemmaConfig, DiffusionGemmaTextConfig, Gemma4VisionConfig

from sfumato.model.tokenizer import BOI, EOI, IMAGE


def small_config(
    tokenizer,
    hidden_size: int = 256,
    num_layers: int = 4,
    num_heads: int = 4,
    head_dim: int = 64,
    intermediate_size: int = 1024,
    canvas_length: int = 64,
    sliding_window: int = 512,
    max_positions: int = 8192,
) -> DiffusionGemmaConfig:
    """A DiffusionGemma config sized for CPU, with ids taken from ``tokenizer``."""
    text = DiffusionGemmaTextConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=max(1, num_heads // 2),
        head_dim=head_dim,
        global_head_dim=head_dim,
        max_position_embeddings=max_positions,
        sliding_window=sliding_window,
        layer_types=["sliding_attention"] * (num_layers - 1) + ["full_attention"],
        num_experts=1,
        top_k_experts=1,
        moe_intermediate_size=intermediate_size // 4,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    vision = Gemma4VisionConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        head_dim=16,
        position_embedding_size=64,
    )
    return DiffusionGemmaConfig(
        text_config=text,
        vision_config=vision,
        canvas_length=canvas_length,
        boi_token_id=tokenizer.convert_tokens_to_ids(BOI),
        eoi_token_id=tokenizer.convert_tokens_to_ids(EOI),
        image_token_id=tokenizer.convert_tokens_to_ids(IMAGE),
    )
