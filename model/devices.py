"""Where a model runs: the ``--device`` choice, what the machine has, and the weights' dtype.

``--device`` is ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``. ``auto`` takes the first GPU
when the weights fit there; when they do not, and CUDA is present, it spreads them over every
GPU and then CPU memory (``device_map="auto"``, accelerate), which is slower but runs. Apple
silicon (``mps``) runs in bfloat16: Gemma's activations overflow float16, so a Mac whose MPS has
no bfloat16 (macOS before 14) is refused for DiffusionGemma with the way out named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sfumato.model.api import EngineError

DEVICE_SPEC = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
DEVICE_HELP = "auto, cpu, cuda, cuda:N or mps"
SPREAD = "auto"  # the device label of a model spread by accelerate over GPUs and CPU memory


@dataclass(frozen=True)
class Placement:
    """Where the weights go: ``device`` ("cpu", "cuda:0", "mps", or ``SPREAD``) and its dtype.

    ``device_map`` is what ``from_pretrained`` gets (None: load on CPU, then ``.to(device)``).
    """

    device: str
    dtype: str  # "float32", "bfloat16" or "float16"
    device_map: str | dict | None = None

    @property
    def kind(self) -> str:
        """"cpu", "cuda" or "mps" (a spread model counts as CUDA: its first layers are there)."""
        return "cuda" if self.device == SPREAD else self.device.split(":")[0]


def parse_device(text: str | None) -> str:
    """The normalised ``--device`` value (None and "" mean auto); EngineError for anything else."""
    value = (text or "auto").strip().lower()
    if not DEVICE_SPEC.match(value):
        raise EngineError(f"--device must be {DEVICE_HELP} (got {text!r})")
    return "cuda:0" if value == "cuda" else value


def check_available(device: str) -> None:
    """EngineError, naming the way out, when ``device`` (parsed) is not on this machine."""
    import torch

    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise EngineError(f"device {device} was asked for but CUDA is not available; use --device cpu or a server")
        index, count = int(device.split(":")[1]), torch.cuda.device_count()
        if index >= count:
            raise EngineError(f"device {device} was asked for but this machine has {count} CUDA device(s)")
    elif device == "mps" and not mps_available():
        raise EngineError("device mps was asked for but Apple's Metal (MPS) is not available; use --device cpu")


def mps_available() -> bool:
    import torch

    backend = getattr(torch.backends, "mps", None)
    return bool(backend and backend.is_available())


def cuda_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def free_bytes(device: str) -> int:
    """Memory free for weights on ``device``: the GPU's free memory, or the RAM available (CPU, MPS)."""
    if device.startswith("cuda"):
        import torch

        return int(torch.cuda.mem_get_info(int(device.split(":")[1]))[0])
    import psutil

    return int(psutil.virtual_memory().available)  # Apple silicon's GPU shares this memory


def supports_bfloat16(device: str) -> bool:
    import torch

    if device.startswith("cuda"):
        return torch.cuda.is_bf16_supported()
    if device == "mps":
        try:
            torch.ones(1, dtype=torch.bfloat16, device="mps")
        except (RuntimeError, TypeError):
            return False
    return True


def dtype_for(device: str, needs_bfloat16: bool) -> str:
    """float32 on CPU (bf16 matmuls are slow there), bfloat16 on GPUs, float16 where bf16 is missing.

    ``needs_bfloat16``: the model overflows in float16 (Gemma does), so a GPU without bfloat16 is
    refused instead of producing NaNs.
    """
    if device == "cpu":
        return "float32"
    if supports_bfloat16(device):
        return "bfloat16"
    if needs_bfloat16:
        machine = "this Mac's Metal (MPS) has no bfloat16 (macOS 14 or newer has it)" if device == "mps" else (
            f"{device} has no bfloat16")
        raise EngineError(f"{machine} and this model overflows in float16; use --device cpu or a server")
    return "float16"
