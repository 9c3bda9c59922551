"""An answer before loading: where the weights go, in which dtype, and whether they fit at all.

The weights' size comes from the config (``sfumato.model.memory``); the free memory from the machine
(``sfumato.model.devices``). When they do not fit, loading stops with one line that names the ways out
(quantize, another device, a server) instead of swapping the machine to death or dying in a CUDA
out-of-memory error halfway through.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sfumato.model import devices
from sfumato.model.api import EngineError
from sfumato.model.devices import SPREAD, Placement
from sfumato.model.memory import GB, WeightsEstimate, estimate_weights
from sfumato.model.quantization import CHOICES, check_request, checkpoint_scheme, parse_quantize, require, silence_import_noise, transformers_options

HEADROOM = 1.1  # loading briefly holds a weight at full precision while it is quantized
WORKSPACE = 0.5 * GB  # activations, the prompt's cache and the canvas during a pass
SERVER_HINT = "a server (--model http://HOST:PORT/v1)"

Estimate = Callable[[str], WeightsEstimate | None]  # dtype -> the weights' estimate (None: unknown)


def needed_bytes(estimate: WeightsEstimate) -> int:
    return int(estimate.bytes * HEADROOM + WORKSPACE)


def plan(
    choice: str | None, quantize: str, raw_config: dict, source: str, estimate: Estimate, needs_bfloat16: bool
) -> tuple[Placement, WeightsEstimate | None]:
    """The placement for ``--device choice``, or EngineError with the way out.

    ``auto``: the first GPU if the weights fit there, else all GPUs and CPU memory together,
    else MPS, else the CPU.
    """
    device = devices.parse_device(choice)
    if device == "auto":
        device = "cuda:0" if devices.cuda_count() else "mps" if devices.mps_available() else "cpu"
        spread_allowed = device == "cuda:0"
    else:
        devices.check_available(device)
        spread_allowed = False
    placement = Placement(device, devices.dtype_for(device, needs_bfloat16))
    check_request(quantize, placement.kind, raw_config, source)
    weights = estimate(placement.dtype)
    if weights is None or needed_bytes(weights) <= devices.free_bytes(device):
        return placement, weights
    if spread_allowed and needed_bytes(weights) <= _spread_free_bytes():
        require("accelerate", "spreading a model over GPUs and CPU memory")
        return Placement(SPREAD, placement.dtype, device_map="auto"), weights
    raise EngineError(_refusal(source, weights, device, quantize, spread_allowed))


def _spread_free_bytes() -> int:
    return sum(devices.free_bytes(f"cuda:{index}") for index in range(devices.cuda_count())) + devices.free_bytes("cpu")


def _refusal(source: str, weights: WeightsEstimate, device: str, quantize: str, tried_spread: bool) -> str:
    free = devices.free_bytes(device)
    where = "this machine's memory" if device in ("cpu", "mps") else device
    ways = []
    if device.startswith("cuda") and quantize not in ("int4", "nf4"):
        ways.append("--quantize int4")
    elif device == "cpu" and quantize == "none":
        ways.append("--quantize int8")
    if device.startswith("cuda") and not tried_spread:
        ways.append("--device auto (all GPUs and CPU memory)")
    elif not device.startswith("cuda"):
        ways.append("a machine with a GPU")
    ways.append(SERVER_HINT)
    return (
        f"{source} needs about {needed_bytes(weights) / GB:.1f} GB ({weights.describe()}) but {where} has "
        f"{free / GB:.1f} GB free; try {', '.join(ways[:-1])} or {ways[-1]}"
    )


@dataclass(frozen=True)
class LoadPlan:
    """What ``from_pretrained`` is asked to do, decided (and checked) before it runs."""

    placement: Placement
    quantize: str
    weights: WeightsEstimate | None

    @property
    def precision(self) -> str:
        """The status bar's word: "bfloat16", or "int8 (float32)" for quantized weights and their compute dtype."""
        dtype = self.placement.dtype
        return dtype if self.quantize == "none" else f"{self.quantize} ({dtype})"

    def device_label(self, device_map: dict | None) -> str:
        """ "cuda:0", or for a spread model the devices it landed on, e.g. "cuda:0+cuda:1+cpu"."""
        if self.placement.device != SPREAD or not device_map:
            return self.placement.device
        names = [f"cuda:{where}" if isinstance(where, int) else str(where) for where in device_map.values()]
        return "+".join(dict.fromkeys(names))

    def from_pretrained_options(self, diffusion_gemma: bool) -> dict:
        """dtype, device map and quantization for ``from_pretrained``; weights load straight onto a GPU."""
        import torch

        placement = self.placement
        options = {"dtype": getattr(torch, placement.dtype)}
        if placement.device_map is not None:
            options["device_map"] = placement.device_map
        elif placement.device != "cpu":
            options["device_map"] = {"": placement.device}
        options.update(transformers_options(self.quantize, diffusion_gemma, placement.dtype))
        return options


def plan_load(
    source: str, raw_config: dict, device: str | None, quantize: str | None,
    build: Callable[[], object] | None, needs_bfloat16: bool,
) -> LoadPlan:
    """Check the request and the machine; ``build()`` makes the model from its config (for the estimate)."""
    silence_import_noise()
    quantize = parse_quantize(quantize)
    if quantize == "auto":  # a checkpoint's automatic precision is its full one
        quantize = "none"
    own = checkpoint_scheme(raw_config)  # an already quantized folder is priced at its own scheme
    priced = quantize if own is None else own if own in CHOICES else None

    def estimate(dtype: str) -> WeightsEstimate | None:
        if build is None or priced is None:
            return None
        try:
            return estimate_weights(build, priced, dtype)
        except Exception:  # a config the meta build cannot take: no estimate, the load itself will tell
            return None

    chosen, weights = plan(device, quantize, raw_config, source, estimate, needs_bfloat16)
    return LoadPlan(chosen, quantize, weights)
