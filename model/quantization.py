"""``--quantize {none,int8,int4,nf4}``: which weights are stored in fewer bits, by which library.

- ``int8``: torchao's int8 weight-only (one scale per output row), on CPU and CUDA.
- ``int4``: torchao's int4 weight-only, groups of 64, packed for torch's own CUDA kernel
  (tinygemm); CUDA only.
- ``nf4``: bitsandbytes' 4-bit NormalFloat; CUDA only.

What gets quantized: the weights of the transformer's linear layers and, for torchao, the
experts of a mixture of experts (3-D parameters, most of DiffusionGemma-26B-A4B's weights).
bitsandbytes quantizes ``nn.Linear`` modules only, so under ``nf4`` a mixture of experts keeps
its experts in bfloat16; the memory estimate counts them that way. Embeddings, norms, routers and
the output head keep their precision.

Why the modules are named explicitly: DiffusionGemma's encoder and decoder share (tie) every
text weight, and transformers by default leaves every tied weight unquantized, so with the
defaults nothing but the vision tower would be quantized (measured with transformers 5.24).

The libraries are optional extras (``pip install 'sfumato[gpu]'``) imported only when asked.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import re

from sfumato.model.api import EngineError

CHOICES = ("auto", "none", "int8", "int4", "nf4")  # auto: the full precision (none), for every model today
CUDA_ONLY = {"int4", "nf4"}
LIBRARY = {"int8": "torchao", "int4": "torchao", "nf4": "bitsandbytes"}
PACKAGE = {"torchao": "torchao", "bitsandbytes": "bitsandbytes", "quanto": "optimum-quanto"}
INT4_GROUP = 64  # 128 would skip the 26B model's expert down-projections (704 = 5.5 x 128)
NF4_BLOCK = 64  # bitsandbytes keeps one float32 absmax per 64 weights
KEEP = ["lm_head"]  # tied to the embedding; quantizing it would quantize the embedding too
# DiffusionGemma's linear layers (attention, dense MLP, self-conditioning) and its experts
LINEAR_NAMES = r"(q|k|v|o|gate|up|down)_proj"
EXPERT_NAMES = r"experts\.(gate_up_proj|down_proj)"


def parse_quantize(text: str | None) -> str:
    value = (text or "auto").strip().lower()
    if value not in CHOICES:
        raise EngineError(f"--quantize must be one of {', '.join(CHOICES)} (got {text!r})")
    return value


def checkpoint_scheme(raw_config: dict) -> str | None:
    """The scheme of a folder whose weights are already quantized (its ``quantization_config``).

    "nf4", "int4", "int8", another library's method name, or None for an ordinary folder.
    """
    config = raw_config.get("quantization_config")
    if not isinstance(config, dict):
        return None
    method = str(config.get("quant_method", "unknown")).lower()
    if method == "bitsandbytes":
        if config.get("load_in_4bit"):
            return str(config.get("bnb_4bit_quant_type", "nf4"))
        return "int8" if config.get("load_in_8bit") else method
    if method == "torchao":
        described = json.dumps(config.get("quant_type", "")).lower()
        return "int4" if "int4" in described else "int8" if "int8" in described else method
    bits = config.get("bits")
    return f"int{bits}" if bits in (4, 8) else method


def check_request(quantize: str, device_kind: str, raw_config: dict, source: str) -> None:
    """EngineError for a request that cannot work, before anything heavy is loaded."""
    if quantize in CUDA_ONLY and device_kind != "cuda":
        raise EngineError(
            f"--quantize {quantize} needs a CUDA GPU (this run is on {device_kind}); "
            "use --quantize int8 on the CPU, or a server"
        )
    if quantize == "int8" and device_kind == "mps":
        raise EngineError("--quantize int8 runs on CPU and CUDA, not on Apple's MPS; use --quantize none on mps")
    scheme = checkpoint_scheme(raw_config)
    if scheme is not None and quantize not in ("none", scheme):
        raise EngineError(
            f"{source}: the weights are already quantized ({scheme}); load it with --quantize none"
        )
    if quantize != "none":
        require(LIBRARY[quantize], f"--quantize {quantize}")
    elif scheme is not None:
        method = str(raw_config["quantization_config"].get("quant_method", "")).lower()
        if method in PACKAGE:
            require(method, f"{source} (quantized with {method})")


def require(library: str, purpose: str) -> None:
    """EngineError naming the install command when ``library`` is not installed."""
    if importlib.util.find_spec(library.replace("-", "_")) is None:
        raise EngineError(f"{purpose} needs {PACKAGE.get(library, library)}: pip install 'sfumato[gpu]'")


def quantizes(name: str, module, quantize: str) -> bool:
    """Whether ``quantize`` stores parameter ``name`` (of ``module``) in fewer bits.

    The memory estimate asks this of every parameter; it mirrors ``transformers_options``.
    """
    import torch

    if quantize == "none" or any(name == f"{keep}.weight" for keep in KEEP):
        return False
    if quantize == "nf4":
        return isinstance(module, torch.nn.Linear) and name.endswith(".weight") and _not_vision(name)
    if re.fullmatch(rf".*\.{EXPERT_NAMES}", name):
        return True
    if _is_diffusion_gemma_name(name):
        return bool(re.fullmatch(rf".*\.{LINEAR_NAMES}\.weight", name)) and _not_vision(name)
    return isinstance(module, torch.nn.Linear) and name.endswith(".weight")


def _not_vision(name: str) -> bool:
    return "vision_tower" not in name and "embed_vision" not in name


def _is_diffusion_gemma_name(name: str) -> bool:
    return name.startswith(("model.encoder.", "model.decoder."))


def transformers_options(quantize: str, diffusion_gemma: bool, compute_dtype: str) -> dict:
    """Keyword arguments for ``from_pretrained`` that quantize the weights as they load."""
    if quantize == "none":
        return {}
    silence_import_noise()
    import torch

    if quantize == "nf4":
        from transformers import BitsAndBytesConfig

        skip = KEEP + (["vision_tower", "embed_vision"] if diffusion_gemma else [])
        return {"quantization_config": BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=getattr(torch, compute_dtype),
            llm_int8_skip_modules=skip,
        )}
    from torchao.quantization import FqnToConfig, Int4WeightOnlyConfig, Int8WeightOnlyConfig
    from transformers import TorchAoConfig

    if quantize == "int8":
        scheme = Int8WeightOnlyConfig()
    else:
        scheme = Int4WeightOnlyConfig(group_size=INT4_GROUP, int4_packing_format="tile_packed_to_4d")
    if not diffusion_gemma:
        return {"quantization_config": TorchAoConfig(scheme, modules_to_not_convert=KEEP)}
    per_name = FqnToConfig({rf"re:.*\.{LINEAR_NAMES}": scheme, rf"re:.*\.{EXPERT_NAMES}": scheme})
    # the experts' default (grouped_mm) forward transposes the weight, which torchao's tensors lack
    return {
        "quantization_config": TorchAoConfig(per_name, modules_to_not_convert=KEEP),
        "experts_implementation": "eager",
    }


def silence_import_noise() -> None:
    """torchao logs every CUDA library it cannot load on a CPU machine, and torch a deprecation.

    transformers imports torchao whenever it is installed, so this is called before any load.
    """
    logging.getLogger("torchao").setLevel(logging.ERROR)
    logging.getLogger("torch.utils._pytree").setLevel(logging.ERROR)


def grad_free(model):
    """``torch.inference_mode()``, or ``torch.no_grad()`` for a quantized model.

    torchao cannot take one expert out of a quantized 3-D weight under inference mode ("Cannot set
    version_counter for inference tensor"); no_grad costs a little bookkeeping and works.
    """
    import torch

    return torch.no_grad() if getattr(model, "hf_quantizer", None) is not None else torch.inference_mode()
