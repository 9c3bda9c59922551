"""Model specs -> a loaded backend.

A spec is ``embedded`` (the default: a pretrained base from a registry package with the adapter
shipped in ``resources/models/sfumato-lm``), a local folder, or a hub id. Loading is safe by default: safetensors weights only, no remote code unless the user
allows it, no network unless downloads are allowed. Every failure is an ``EngineError`` with one
line that names the folder and what is wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from sfumato.model.api import SERVER_URL, Backend, Cancelled, CancelFlag, EngineError, ModelInfo, failure_line
from sfumato.model.load_progress import LOAD_LOCK, Report, watch_loading
from sfumato.model.memory import measured_bytes, parameter_count
from sfumato.model.placement import LoadPlan, plan_load
from sfumato.model.quantization import silence_import_noise

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
MAX_LAYERS = 1000  # the deepest published models have a few hundred


def resolve_spec(spec: str) -> tuple[Path | None, str | None]:
    """(folder, None) for a local model, (None, hub id) for a hub model; EngineError otherwise."""
    path = Path(spec).expanduser()
    if path.exists():
        if not path.is_dir():
            raise EngineError(f"{spec}: a model must be a folder, not a file")
        return path.resolve(), None
    if HUB_ID.match(spec) and ".." not in spec:
        return None, spec
    raise EngineError(f"{spec}: no such model folder, and not a hub id of the form owner/name")


def check_config(folder: Path) -> None:
    """Fail early, with a clear line, on a folder whose config.json is missing, not JSON or of the wrong shape."""
    if not (folder / "config.json").is_file():
        raise EngineError(f"{folder}: no config.json, so this is not a model folder")
    try:
        raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise EngineError(f"{folder}: config.json is not valid JSON ({failure_line(error)})") from None
    check_config_shape(str(folder), raw)


def check_config_shape(source: str, raw: object) -> None:
    """EngineError for a config that is not a JSON object, or whose fields that pick the backend
    (``architectures``, ``model_type``) have the wrong type: they are read before transformers checks any;
    or that asks for more layers than any model has (its build would hang the load)."""
    if not isinstance(raw, dict):
        raise EngineError(f"{source}: config.json must hold a JSON object")
    architectures = raw.get("architectures")
    if architectures is not None and not (isinstance(architectures, list) and all(isinstance(name, str) for name in architectures)):
        raise EngineError(f"{source}: config.json: 'architectures' must be a list of names")
    if raw.get("model_type") is not None and not isinstance(raw["model_type"], str):
        raise EngineError(f"{source}: config.json: 'model_type' must be a name")
    for name, value in _layer_counts(raw):
        if value > MAX_LAYERS:
            raise EngineError(f"{source}: config.json: {name} is {value}, more layers than any model has "
                              f"(at most {MAX_LAYERS}): a corrupt config")


def _layer_counts(raw: dict) -> Iterator[tuple[str, int]]:
    """(dotted name, value) of every whole number in the config and its sub-configs that counts layers
    (``num_hidden_layers``, ``n_layer``, ``decoder_layers``...): building a model loops over them, so a
    huge one hangs the load before any weight is read, even on the meta device."""
    pending = [("", raw)]
    while pending:
        path, config = pending.pop()
        for key, value in config.items():
            if isinstance(value, dict):
                pending.append((f"{path}{key}.", value))
            elif (key.endswith("layers") or key == "n_layer") and isinstance(value, int) and not isinstance(value, bool):
                yield f"{path}{key}", value


def check_files(folder: Path, allow_pickle: bool = False) -> None:
    """Fail early, with a clear line, on weights and tokenizer files that from_pretrained would choke on."""
    safetensors = list(folder.glob("*.safetensors"))
    if not safetensors:
        pickles = list(folder.glob("*.bin")) + list(folder.glob("*.pt"))
        if pickles and not allow_pickle:
            raise EngineError(f"{folder}: only pickle weights ({pickles[0].name}); Sfumato loads safetensors only")
        if not pickles:
            raise EngineError(f"{folder}: no weights (*.safetensors) found")
    if not (folder / "tokenizer.json").is_file() and not (folder / "tokenizer_config.json").is_file():
        raise EngineError(f"{folder}: no tokenizer files (tokenizer.json)")


def load_backend(
    spec: str = "embedded",
    device: str | None = None,
    allow_downloads: bool = False,
    trust_remote_code: bool = False,
    allow_pickle: bool = False,
    quantize: str | None = None,
    progress: Report | None = None,
    cancel: CancelFlag | None = None,
    remote_model: str | None = None,
    admits: Callable[[str], bool] | None = None,
) -> Backend:
    """Load ``spec`` and wrap it in the backend its config asks for; a server URL connects instead.

    The one place that reads a config, picks the device, loads weights and tokenizer and builds
    the ``ModelInfo``; a backend's constructor only wraps the loaded model. ``device`` and
    ``quantize`` are checked against the machine before any weight is read (``sfumato.model.placement``):
    a model that cannot fit is refused with the way out. ``progress`` hears (tensors read, total)
    while the weights load; ``cancel`` stops the load there (``Cancelled``). ``admits``: the
    kinds of address a server may be reached at (``RemoteOptions.admits``).
    """
    if spec.startswith(("http://", "https://")):
        from sfumato.model.remote.credentials import shown_url

        if not SERVER_URL.match(spec):
            raise EngineError(f"{shown_url(spec)}: a server URL must end in /v1 (e.g. http://host:8000/v1)")
        if quantize not in (None, "auto", "none"):
            raise EngineError(f"--quantize {quantize}: a server chooses its own precision; drop it for {shown_url(spec)}")
        from sfumato.model.remote.backend import RemoteOptions, connect

        return connect(spec, RemoteOptions(model=remote_model, admits=admits))
    if spec == "embedded":
        return load_embedded(progress, cancel, device, quantize)
    folder, hub_id = resolve_spec(spec)
    if folder is not None:
        check_config(folder)
    elif not allow_downloads:
        raise EngineError(f"{hub_id}: not a local folder, and downloads are off (turn them on in settings)")
    source = str(folder) if folder is not None else hub_id
    local_only = not allow_downloads
    silence_import_noise()  # before transformers imports torchao (it does whenever torchao is installed)

    from transformers import AutoModel, AutoModelForMaskedLM, DiffusionGemmaForBlockDiffusion, PreTrainedConfig
    from transformers.utils import logging as transformers_logging

    from sfumato.model.diffusion_gemma import DiffusionGemmaBackend
    from sfumato.model.masked_diffusion import MaskedDiffusionBackend, architecture_name, masked_diffusion_family

    transformers_logging.disable_progress_bar()
    try:
        raw, _ = PreTrainedConfig.get_config_dict(source, local_files_only=local_only)
    except Exception as error:  # transformers raises many types for a bad config
        raise EngineError(f"{source}: cannot read the model config ({failure_line(error)})") from None
    check_config_shape(source, raw)
    family = masked_diffusion_family(raw)
    if raw.get("model_type") != "diffusion_gemma" and family is None:
        raise EngineError(f"{source}: unsupported architecture {architecture_name(raw)}")
    remote = family not in (None, "masked-lm")
    if remote and not trust_remote_code:
        raise EngineError(f"{source}: {architecture_name(raw)} runs the checkpoint's own code; allow remote code to load it")
    if folder is not None:
        check_files(folder, allow_pickle)
    gemma = family is None
    model_class = DiffusionGemmaForBlockDiffusion if gemma else AutoModel if remote else AutoModelForMaskedLM
    profile = _read_profile(folder) if gemma else None  # a bad one is refused before the weights are read
    build = _builder(model_class, source, local_only, trust_remote_code)
    with LOAD_LOCK:
        plan = plan_load(source, raw, device, quantize, build, needs_bfloat16=gemma)  # Gemma overflows float16
    with LOAD_LOCK, watch_loading(progress, cancel):
        model, tokenizer = _load_weights(model_class, gemma, source, plan, local_only, allow_pickle, trust_remote_code)

    if plan.placement.device == "cpu":
        from sfumato.model.cpu_threads import follow_free_cores
        from sfumato.model.diffusion_gemma_library import called_parts

        follow_free_cores(*(called_parts(model) if gemma else (model.base_model,)))
    if gemma:
        vocab_size = model.config.text_config.vocab_size
        if len(tokenizer) > vocab_size:
            raise EngineError(f"{source}: the tokenizer has {len(tokenizer)} tokens but the model only {vocab_size}")
        info = _model_info(source, folder, "diffusion-gemma", plan, model, profile.prompt_layout == "chat")
        return DiffusionGemmaBackend(model, tokenizer, profile, info)
    return MaskedDiffusionBackend(model, tokenizer, _model_info(source, folder, "masked-diffusion", plan, model, False))


def load_embedded(progress: Report | None = None, cancel: CancelFlag | None = None, device: str | None = None,
                  quantize: str | None = None) -> Backend:
    """The embedded default: the registry package's base with this project's adapter merged in,
    on the CPU its layers in bfloat16 where the CPU runs that faster, else every linear layer with
    float16 weights (``lm_cpu``; ``quantize`` "none": float32; "int8": its linear layers in int8, a
    pass faster but rounding that changes half the results), or in bfloat16 with ``--device cuda``."""
    if quantize not in (None, "auto", "none", "int8"):
        raise EngineError(f"--quantize {quantize}: the embedded model runs in bfloat16, float16 weights or float32 (or, with --quantize int8, int8) "
                          "on the CPU and in bfloat16 on CUDA; int4 and nf4 are for DiffusionGemma and masked-diffusion checkpoints")
    from sfumato.model.devices import parse_device

    device = parse_device(device)
    if device == "mps":
        raise EngineError("--device mps: the embedded model runs on cpu or cuda")
    target = device if device.startswith("cuda") else "cpu"  # auto: 135M parameters run well on a CPU
    reduced = target == "cpu" and quantize in (None, "auto")  # bfloat16 where it pays, else float16 weights
    if target == "cuda" and quantize == "int8":
        raise EngineError("--quantize int8: the embedded model's int8 runs on the CPU; on CUDA it runs in bfloat16")
    silence_import_noise()
    import torch

    from sfumato.model.lm_base import BaseMissing, load_adapted, packing_ahead, shipped_adapter, trained_prefix

    packing = packing_ahead() if reduced else None  # beside the imports below
    from transformers.utils import logging as transformers_logging

    from sfumato.model.cpu_threads import follow_free_cores
    from sfumato.model.lm_bfloat16 import runs_bfloat16
    from sfumato.model.lm_cpu import runs_float16
    from sfumato.model.lm_engine import LmDenoiserBackend
    from sfumato.model.lm_head import is_large
    from sfumato.model.memory import release_freed_heap

    transformers_logging.disable_progress_bar()
    if target == "cuda" and not torch.cuda.is_available():
        raise EngineError("--device cuda: no CUDA GPU is available")
    try:
        with LOAD_LOCK, watch_loading(progress, cancel):
            model, tokenizer = load_adapted(cpu=target == "cpu", reduced=reduced, packing=packing)
        release_freed_heap()
    except Cancelled:
        raise
    except BaseMissing as error:
        raise EngineError(f"embedded model: {error}") from None
    except Exception as error:
        raise EngineError(f"embedded model: cannot load it ({failure_line(error)})") from None
    if target == "cuda":
        model = model.to(target, torch.bfloat16)
    int8 = target == "cpu" and quantize == "int8"
    large = target == "cpu" and is_large(model)
    if int8 and large:
        raise EngineError("--quantize int8: this embedded model already runs its layers with float16 weights and its "
                          "vocabulary in int8 on the CPU")
    parameters = parameter_count(model)  # a CPU form read from the cache holds its layers packed
    if target == "cpu":
        model = as_run_on_cpu(model, int8, reduced)
        follow_free_cores(model.base_model)
    adapter = shipped_adapter()
    precision = ("bfloat16" if target == "cuda" else "int8 (float32)" if int8
                 else "float16 weights, int8 vocabulary (float32 sums)" if large
                 else "bfloat16 layers, float32 output layer" if runs_bfloat16(model)
                 else "float16 weights (float32 sums)" if runs_float16(model) else "float32")
    info = ModelInfo(
        name="sfumato-lm" if adapter else "SmolLM2-135M (no adapter)", backend="lm-denoiser", device=target,
        parameters=parameters, instruction_tuned=False, license="Apache-2.0", precision=precision,
        memory_bytes=measured_bytes(model),
    )
    return LmDenoiserBackend(model, tokenizer, info, target, trained_prefix(adapter))


def as_run_on_cpu(model, int8: bool = False, reduced: bool = True):
    """The embedded model (float32) as the editor runs it on the CPU: its linear layers in int8 when
    asked (``--quantize int8``), a large vocabulary's model in its CPU form (``lm_cpu``), else
    (``reduced``) its layers below the output layer in bfloat16 where this CPU runs that faster
    (``lm_bfloat16``) or the CPU form, or as it is."""
    from sfumato.model.lm_base import with_int8_linears
    from sfumato.model.lm_bfloat16 import bfloat16_pays, runs_bfloat16, with_bfloat16_linears
    from sfumato.model.lm_cpu import for_cpu
    from sfumato.model.lm_head import is_large

    if int8:
        return with_int8_linears(model)
    if is_large(model):
        return for_cpu(model)
    if not reduced or runs_bfloat16(model):  # (a cached copy may be read so already)
        return model
    return with_bfloat16_linears(model) if bfloat16_pays() else for_cpu(model)


def _builder(model_class, source: str, local_only: bool, trust_remote_code: bool):
    """A callable that builds ``model_class`` from the config alone (for the memory estimate)."""

    def build():
        from transformers import AutoConfig, PreTrainedModel

        config = AutoConfig.from_pretrained(source, local_files_only=local_only, trust_remote_code=trust_remote_code)
        if issubclass(model_class, PreTrainedModel):
            from sfumato.model.diffusion_gemma_library import from_config

            return from_config(model_class, config)
        return model_class.from_config(config, trust_remote_code=trust_remote_code)  # an Auto class

    return build


def _load_weights(model_class, gemma: bool, source: str, plan: LoadPlan, local_only: bool, allow_pickle: bool,
                  trust_remote_code: bool):
    """(model placed as ``plan`` says, tokenizer). Any failure but a cancel is one EngineError line;
    so is a checkpoint whose weights lack parameters its config asks for (a partial download, a
    config from another model): transformers would fill them at random and the model write noise."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local_only, trust_remote_code=trust_remote_code)
        model, report = model_class.from_pretrained(  # no hub kernels: they fetch code at load
            source, use_safetensors=not allow_pickle, local_files_only=local_only, trust_remote_code=trust_remote_code,
            output_loading_info=True, use_kernels=False, **plan.from_pretrained_options(diffusion_gemma=gemma),
        )
    except Cancelled:
        raise
    except Exception as error:
        raise EngineError(f"{source}: cannot load the model ({failure_line(error)})") from None
    parameters = {name for name, _ in model.named_parameters()}
    missing = sorted(set(report.get("missing_keys") or ()) & parameters)
    if missing:
        raise EngineError(f"{source}: its weights lack {len(missing)} of the parameters its config asks for "
                          f"({missing[0]}, …): a partial download or a config.json from another model")
    return model, tokenizer


def _model_info(source: str, folder: Path | None, backend: str, plan: LoadPlan, model, instruction_tuned: bool) -> ModelInfo:
    return ModelInfo(
        name=Path(source).name if folder is not None else source,
        backend=backend,
        device=plan.device_label(getattr(model, "hf_device_map", None)),
        parameters=sum(p.numel() for p in model.parameters()),
        instruction_tuned=instruction_tuned,
        license=_read_license(folder),
        precision=plan.precision,
        memory_bytes=measured_bytes(model),
    )


PROFILE_CHOICES = {"prompt_layout": ("fim", "chat"), "fim_order": ("psm", "spm"), "canvas_noise": ("uniform", "mask")}


def _read_profile(folder: Path | None):
    from sfumato.model.diffusion_gemma import Profile

    path = folder / "sfumato.json" if folder is not None else None
    if path is None or not path.is_file():
        return Profile()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("it must hold a JSON object")
        known = {key: data[key] for key in ("prompt_layout", "fim_order", "canvas_noise", "context_tokens", "joint_gaps")
                 if key in data}
        for key, choices in PROFILE_CHOICES.items():
            if key in known and known[key] not in choices:
                raise ValueError(f"{key} must be {' or '.join(choices)}, not {known[key]!r}")
        context = known.get("context_tokens", 1)
        if not isinstance(context, int) or isinstance(context, bool) or context < 1:
            raise ValueError("context_tokens must be a whole number of at least 1")
        if not isinstance(known.get("joint_gaps", False), bool):
            raise ValueError("joint_gaps must be true or false")
        return Profile(**known)
    except (OSError, ValueError, TypeError, RecursionError) as error:
        raise EngineError(f"{path}: unreadable ({error})") from None


def _read_license(folder: Path | None) -> str:
    card = folder / "README.md" if folder is not None else None
    if card is not None and card.is_file():
        match = re.search(r"^license:\s*(\S+)", card.read_text(encoding="utf-8", errors="replace"), re.M)
        if match:
            return match.group(1)
    return "unknown"
