"""The weighted mean of two LoRA adapters of one base, written as one adapter.

An adapter adds ``scale · B @ A`` to each weight it targets. Stacking the two adapters' ``A`` rows,
and their ``B`` columns each multiplied by its adapter's scale and share, gives exactly
``(1 - w) · delta_a + w · delta_b`` at rank ``r_a + r_b``: the weight averaging of two fine-tunings
of one model ("model soups", Wortsman et al. 2022), with nothing approximated.

    python -m sfumato.model.training.blend ADAPTER_A ADAPTER_B WEIGHT OUT
"""

import argparse
import json
from pathlib import Path

from sfumato.model.lm_base import ADAPTER_FILES, base_of, trained_prefix, training_record


def _read(adapter: Path):
    from safetensors.torch import load_file

    config = json.loads((adapter / "adapter_config.json").read_text())
    return config, load_file(adapter / "adapter_model.safetensors")


def blended(a: Path, b: Path, weight: float) -> tuple[dict, dict, dict]:
    """(adapter config, float16 weights, training record) of ``(1 - weight) · a + weight · b``."""
    import torch

    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"the weight of the second adapter is a share, 0 to 1: {weight}")
    if base_of(a) != base_of(b):
        raise ValueError(f"{a} and {b} adapt different bases")
    if trained_prefix(a) != trained_prefix(b):
        raise ValueError(f"{a} and {b} were trained to read prefixes of different lengths")
    config_a, weights_a = _read(a)
    config_b, weights_b = _read(b)
    if set(weights_a) != set(weights_b) or set(config_a["target_modules"]) != set(config_b["target_modules"]):
        raise ValueError(f"{a} and {b} adapt different modules")
    shares = ((1.0 - weight) * config_a["lora_alpha"] / config_a["r"], weight * config_b["lora_alpha"] / config_b["r"])
    rank = config_a["r"] + config_b["r"]
    weights = {}
    for name in weights_a:
        if name.endswith("lora_A.weight"):
            stacked = torch.cat([weights_a[name].float(), weights_b[name].float()], dim=0)
        elif name.endswith("lora_B.weight"):
            stacked = torch.cat([weights_a[name].float() * shares[0], weights_b[name].float() * shares[1]], dim=1)
        else:
            raise ValueError(f"{a}: {name} is not a LoRA matrix")
        weights[name] = stacked.half().contiguous()
    config = config_a | {"r": rank, "lora_alpha": rank, "rank_pattern": {}, "alpha_pattern": {}}  # scale 1: folded into B
    record = {"base": base_of(a).name, "blend": {"weight": weight, "a": training_record(a)[1], "b": training_record(b)[1]}}
    if trained_prefix(a) != trained_prefix(None):
        record["prefix"] = trained_prefix(a)
    return config, weights, record


def write(folder: Path, config: dict, weights: dict, record: dict) -> None:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    config_file, weights_file = ADAPTER_FILES
    (folder / config_file).write_text(json.dumps(config, indent=1))
    save_file(weights, folder / weights_file)
    (folder / "training.json").write_text(json.dumps(record, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("weight", type=float, help="the second adapter's share (0 to 1)")
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    write(args.out, *blended(args.a, args.b, args.weight))


if __name__ == "__main__":
    main()
