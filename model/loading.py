"""Model specs -> a loaded backend.

A spec is ``embedded`` (the default model shipped in ``resources/models/``), a local folder, or
a hub id. Loading is safe by default: safetensors weights only, no remote code unless the user
allows it, no network unless downloads are allowed. Every failure is an ``EngineError`` with one
line that names the folder and what is wrong.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from model.api import Backend, Cancelled, CancelFlag, EngineError, ModelInfo
from model.load_progress import Report, watch_loading
from model.quantization import silence_import_noise

EMBEDDED_DIR = Path(__file__).resolve().parent.parent / "resources" / "models"
EMBEDDED_NAME = "sfumato-small"
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def resolve_spec(spec: str) -> tuple[Path | None, str | None]:
    """(folder, None) for a local model, (None, hub id) for a hub model; EngineError otherwise."""
    if spec == "embedded":
        folder = EMBEDDED_DIR / EMBEDDED_NAME
        if not (folder / "config.json").is_file():
            raise EngineError(f"the embedded model is not installed ({folder} has no config.json)")
        return folder, None
    path = Path(spec).expanduser()
    if path.exists():
        if not path.is_dir():
            raise EngineError(f"{spec}: a model must be a folder, not a file")
        return path.resolve(), None
    if HUB_ID.match(spec) and ".." not in spec:
        return None, spec
    raise EngineError(f"{spec}: no such model folder, and not a hub id of the form owner/name")


def check_folder(folder: Path, allow_pickle: bool = False) -> None:
    """Fail early, with a clear line, on folders that from_pretrained would choke on."""
    if not (folder / "config.json").is_file():
        raise EngineError(f"{folder}: no config.json, so this is not a model folder")
    try:
        json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise EngineError(f"{folder}: config.json is not valid JSON ({error})") from None
    safetensors = list(folder.glob("*.safetensors"))
    if not safetensors:
        pickles = list(folder.glob("*.bin")) + list(folder.glob("*.pt"))
        if pickles and not allow_pickle:
            raise EngineError(f"{folder}: only pickle weights ({pickles[0].name}); Sfumato loads safetensors only")
        if not pickles:
            raise EngineError(f"{folder}: no weights (*.safetensors) found")
    if not (folder / "tokenizer.json").is_file() and not (folder / "tokenizer_config.json").is_file():
        raise EngineError(f"{folder}: no tokenizer files (tokenizer.json)")


def pick_device(requested: str | None = None) -> str:
    import torch

    if requested and requested != "auto":
        if requested.startswith("cuda") and not torch.cuda.is_available():
            raise EngineError(f"device {requested} was asked for but CUDA is not available")
        return requested
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def load_backend(
    spec: str = "embedded",
    device: str | None = None,
    allow_downloads: bool = False,
    trust_remote_code: bool = False,
    allow_pickle: bool = False,
    quantize: str | None = None,
    progress: Report | None = None,
    cancel: CancelFlag | None = None,
) -> Backend:
    """Load ``spec`` and wrap it in the backend its config asks for.

    ``device`` and ``quantize`` are checked against the machine before any weight is read
    (``model.placement``): a model that cannot fit is refused with the way out. ``progress`` hears
    (tensors read, total) while the weights load; ``cancel`` stops the load there (``Cancelled``).
    """
    folder, hub_id = resolve_spec(spec)
    if folder is not None:
        check_folder(folder, allow_pickle)
    elif not allow_downloads:
        raise EngineError(f"{hub_id}: not a local folder, and downloads are off (turn them on in settings)")
    source = str(folder) if folder is not None else hub_id
    silence_import_noise()  # before transformers imports torchao (it does whenever torchao is installed)

    from transformers import AutoConfig, PreTrainedConfig
    from transformers.utils import logging as transformers_logging

    from model.masked_diffusion import MaskedDiffusionBackend, architecture_name, is_masked_diffusion_config

    transformers_logging.disable_progress_bar()
    try:
        raw, _ = PreTrainedConfig.get_config_dict(source, local_files_only=not allow_downloads)
    except Exception as error:  # transformers raises many types for a bad config
        raise EngineError(f"{source}: cannot read the model config ({_first_line(error)})") from None
    if raw.get("model_type") == "diffusion_gemma":
        config = AutoConfig.from_pretrained(source, local_files_only=not allow_downloads)
        with watch_loading(progress, cancel):
            return _load_diffusion_gemma(source, folder, raw, config, device, quantize, allow_downloads, allow_pickle)
    if is_masked_diffusion_config(raw):
        return MaskedDiffusionBackend.from_pretrained(
            source, device=pick_device(device), trust_remote_code=trust_remote_code, local_files_only=not allow_downloads
        )
    raise EngineError(f"{source}: unsupported architecture {architecture_name(raw)}")


def _load_diffusion_gemma(source, folder, raw, config, device, quantize, allow_downloads, allow_pickle) -> Backend:
    from transformers import AutoTokenizer, DiffusionGemmaForBlockDiffusion

    from model.diffusion_gemma import DiffusionGemmaBackend
    from model.memory import measured_bytes
    from model.placement import plan_load

    plan = plan_load(source, raw, device, quantize, lambda: DiffusionGemmaForBlockDiffusion._from_config(config),
                     needs_bfloat16=True)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=not allow_downloads)
        model = DiffusionGemmaForBlockDiffusion.from_pretrained(
            source, use_safetensors=not allow_pickle, local_files_only=not allow_downloads,
            **plan.from_pretrained_options(diffusion_gemma=True),
        )
    except Cancelled:
        raise
    except Exception as error:
        raise EngineError(f"{source}: cannot load the model ({_first_line(error)})") from None
    if len(tokenizer) > config.text_config.vocab_size:
        raise EngineError(
            f"{source}: the tokenizer has {len(tokenizer)} tokens but the model only {config.text_config.vocab_size}"
        )
    profile = _read_profile(folder)
    info = ModelInfo(
        name=Path(source).name if folder is not None else source,
        backend="diffusion-gemma",
        device=plan.placement.device,
        parameters=sum(p.numel() for p in model.parameters()),
        precision=plan.precision,
        memory_bytes=measured_bytes(model),
        instruction_tuned=profile.prompt_layout == "chat",
        license=_read_license(folder),
    )
    return DiffusionGemmaBackend(model, tokenizer, profile, info)


def _read_profile(folder: Path | None):
    from model.diffusion_gemma import Profile

    path = folder / "sfumato.json" if folder is not None else None
    if path is None or not path.is_file():
        return Profile()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        known = {key: data[key] for key in ("prompt_layout", "canvas_noise", "context_tokens", "joint_gaps") if key in data}
        return Profile(**known)
    except (OSError, ValueError, TypeError) as error:
        raise EngineError(f"{path}: unreadable ({error})") from None


def _read_license(folder: Path | None) -> str:
    card = folder / "README.md" if folder is not None else None
    if card is not None and card.is_file():
        match = re.search(r"^license:\s*(\S+)", card.read_text(encoding="utf-8", errors="replace"), re.M)
        if match:
            return match.group(1)
    return "unknown"


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
