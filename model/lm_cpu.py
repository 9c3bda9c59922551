"""The embedded model as it runs on a CPU without fast bfloat16, and its copy in the user's cache.

Its linear layers keep float16 weights in torch's fbgemm dynamic linears (``torch.float16``: the
weights widened inside the kernel, the activations and sums float32). Measured here, one thread,
a [16, 640] x [640, 2048] product: 0.24 ms against float32's 0.72 (500 rows: 6.7 against 16.4),
half the memory, and the weights' own rounding the only difference (largest 6e-4 on outputs near
3). A pass reads its weights more than it multiplies them, so on session 49's machine (2 cores,
AVX2) this form makes a held-out line about a third faster than float32. A small vocabulary's
output layer is packed so too (SmolLM2's: 113 MB of float32 a pass read); a large vocabulary's
embedding becomes int8 rows, read as input and output layer (``lm_head``).

A large vocabulary's copy in the cache is one safetensors file: the linear weights in float16, the
int8 rows and their scales, the rest as it is. It, or a small vocabulary's float32 copy, is read a
layer at a time, each through its own memory map that is dropped once the layer is packed, so a
start never holds more than one layer's pages beside what the model keeps (peak resident memory:
the goal is 1.2 GB).
"""

from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

from sfumato.model.lm_head import RowsEmbedding, ShortlistHead, install, with_rows
from sfumato.model.memory import release_freed_heap

FILE = "cpu.safetensors"
ROWS, SCALES = "model.embed_tokens.rows", "model.embed_tokens.scales"


PACKED_BLOCK = 512  # fbgemm packs float16 weights in blocks of this many inputs, the last one padded


class Float16Linear(DynamicLinear):
    """An fbgemm dynamic linear layer holding its weight [out, in] (and bias) in float16, which
    knows its size: fbgemm hands packed weights back only by unpacking them (SmolLM2's 211 layers:
    0.45 s each time the model's size was counted). Its inputs are padded to whole blocks
    (measured here: 3.56 bytes a weight 576 inputs wide, SmolLM2's width; 2.0 at 1,024 and 1,536)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the dynamic quantisation API's deprecation notice
            # built 1 x 1: at its real shape the constructor packs a zero weight first, as slow as the real one
            super().__init__(1, 1, bias_=bias is not None, dtype=torch.float16)
        self.out_features, self.in_features = weight.shape
        self.set_weight_bias(weight.float(), None if bias is None else bias.float())
        self.parameters_held = weight.numel() + (0 if bias is None else bias.numel())
        padded = -(-self.in_features // PACKED_BLOCK) * PACKED_BLOCK
        self.bytes_held = 2 * self.out_features * padded + (0 if bias is None else 4 * bias.numel())


def for_cpu(model):
    """``model`` (float32) in its CPU form: int8 rows for a large vocabulary, float16 linear layers
    below the output layer, and a small vocabulary's output layer too. In place; a model already so
    is unchanged."""
    return with_body_linears(with_packed_output_layer(with_rows(model)), Float16Linear)


def with_packed_output_layer(model, packed: Float16Linear | None = None):
    """``model`` with a float output layer packed as a float16 linear layer (a copy: the input
    layer it may be tied to stays float32, as a lookup reads only its rows), or replaced by
    ``packed``, its weight already so packed. In place."""
    if isinstance(model.lm_head, torch.nn.Linear):
        model.lm_head = packed if packed is not None else Float16Linear(model.lm_head.weight.detach(), model.lm_head.bias)
    return model


class Packing:
    """A cached float32 copy's matrices being packed (``packed_matrices``) in a thread of its own.

    Begun before a start imports transformers' modules (on session 50's 2-core machine 5 s of
    Python holding the GIL on one core, the tokenizer's read included) so that the packing (2.6 s
    alone, releasing the GIL) runs beside them on the other core."""

    def __init__(self, folder: Path):
        self.folder = folder
        pool = ThreadPoolExecutor(1, thread_name_prefix="sfumato-packing")
        self._packed = pool.submit(packed_matrices, folder / "model.safetensors")
        pool.shutdown(wait=False)  # its thread ends with this work

    def result(self) -> dict[str, Float16Linear]:
        return self._packed.result()


def read_float32_copy(folder: Path, packing: Packing | None = None):
    """A cached float32 copy (``save_pretrained``'s) read a layer at a time into the CPU form, its
    matrices taken from ``packing`` (begun for ``folder``) or packed in a thread of their own
    while this one builds the empty model."""
    if packing is None or packing.folder != folder:
        packing = Packing(folder)
    model = empty_model(folder)
    packed = packing.result()
    model = read(folder, "model.safetensors", packed=packed, model=model)
    output = packed.get("lm_head.weight", packed.get("model.embed_tokens.weight"))  # tied: saved under the embedding's name
    return with_packed_output_layer(model, output)


def packed_matrices(path: Path) -> dict[str, Float16Linear]:
    """Each matrix (2-D float weight) in the safetensors file at ``path`` as a ``Float16Linear``
    with its bias, by the weight's name; read a layer at a time, each through its own map."""
    from safetensors import safe_open

    with safe_open(path, "pt") as weights:
        names = set(weights.keys())
    packed = {}
    for name, weights in _by_layer(path, names):
        if not name.endswith(".weight") or len(weights.get_slice(name).get_shape()) != 2:
            continue
        weight = weights.get_tensor(name)
        if weight.is_floating_point():
            bias_name = name.removesuffix("weight") + "bias"
            packed[name] = Float16Linear(weight, weights.get_tensor(bias_name) if bias_name in names else None)
    return packed


def runs_float16(model) -> bool:
    """Whether ``model``'s linear layers are ``Float16Linear`` (its CPU form)."""
    return any(isinstance(module, Float16Linear) for module in model.modules())


def with_body_linears(model, linear):
    """``model`` with each linear layer below the output layer replaced by ``linear(weight, bias)``, in place."""
    for name in body_linears(model):
        module = model.get_submodule(name)
        owner, _, leaf = name.rpartition(".")
        setattr(model.get_submodule(owner), leaf, linear(module.weight.detach(), module.bias))
    return model


def body_linears(model) -> list[str]:
    """The names of the float linear layers below the output layer."""
    return [f"model.{name}" for name, module in model.model.named_modules() if isinstance(module, torch.nn.Linear)]


def save(model, folder: Path) -> None:
    """Write ``model`` (float32, its large vocabulary as rows: ``lm_head.with_rows``) to ``folder``
    in the form ``read`` reads, its config beside it."""
    from safetensors.torch import save_file

    linears = {f"{name}.weight" for name in body_linears(model)}
    weights = {name: (tensor.half() if name in linears else tensor).contiguous() for name, tensor in model.named_parameters()}
    model.config.save_pretrained(folder)
    save_file(weights, folder / FILE)


def saved(folder: Path) -> bool:
    return (folder / FILE).is_file()


def empty_model(folder: Path):
    """The float32 model ``folder``'s config describes, its weights without storage (meta)."""
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModelForCausalLM

    with init_empty_weights(include_buffers=False):  # no storage for the weights, real rotary tables
        return AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder), dtype=torch.float32)


def read(folder: Path, file: str = FILE, linear=Float16Linear, packed: dict | None = None, model=None):
    """The model ``save`` wrote to ``folder``, in its CPU form (or another ``file`` of the model's
    weights, each body linear layer built by ``linear(weight, bias)`` or taken from ``packed`` by
    its weight's name), into ``model`` when given (``empty_model``'s). A file that lacks a weight
    or holds one of the wrong shape raises ValueError."""
    from safetensors import safe_open

    path = folder / file
    model = model if model is not None else empty_model(folder)
    with safe_open(path, "pt") as weights:
        names = set(weights.keys())
    if {ROWS, SCALES} <= names:
        _install_rows(model, path)
        release_freed_heap()  # the head's slices were made one at a time
    names -= {ROWS, SCALES}
    linears = {f"{name}.weight" for name in body_linears(model)}
    for name, weights in _by_layer(path, names):
        _place(model, name, weights.get_tensor(name), linears, path, linear, packed or {})
    if getattr(model.config, "tie_word_embeddings", False) and not isinstance(model.get_input_embeddings(), RowsEmbedding):
        model.lm_head.weight = model.get_input_embeddings().weight  # saved once, under the embedding's name
    missing = [name for name, parameter in model.named_parameters() if parameter.is_meta]
    if missing:
        raise ValueError(f"{path} lacks {len(missing)} weights ({missing[0]}, ...)")
    return model.eval()


def _install_rows(model, path: Path) -> None:
    """The int8 rows as input and output layer: the head's packed copy made from one memory map,
    which then goes, and the rows read from another, whose pages are read as texts need them
    (after 20 infills nearly all of them: each read maps 64 KB around it)."""
    from safetensors import safe_open

    with safe_open(path, "pt") as weights:
        head = ShortlistHead.packed(weights.get_tensor(ROWS), weights.get_tensor(SCALES))
    with safe_open(path, "pt") as weights:
        embedding = RowsEmbedding(weights.get_tensor(ROWS), weights.get_tensor(SCALES),
                                  float(getattr(model.get_input_embeddings(), "embed_scale", 1.0)))
    install(model, embedding, head)


def _by_layer(path: Path, names: set[str]):
    """(name, open file) for each of ``names`` in the safetensors file at ``path``, a layer at a
    time, each layer through a map of its own: its pages go when it does."""
    from safetensors import safe_open

    for group in _groups(names):
        with safe_open(path, "pt") as weights:
            for name in group:
                yield name, weights


def _groups(names: set[str]) -> list[list[str]]:
    """The weights by layer (``model.layers.3.``), the rest together."""
    groups: dict[str, list[str]] = {}
    for name in sorted(names):
        parts = name.split(".")
        key = ".".join(parts[:3]) if parts[1:2] == ["layers"] else ""
        groups.setdefault(key, []).append(name)
    return list(groups.values())


def _place(model, name: str, tensor: torch.Tensor, linears: set[str], path: Path, linear, packed: dict) -> None:
    owner_name, _, leaf = name.rpartition(".")
    try:
        owner = model.get_submodule(owner_name)
    except AttributeError:
        raise ValueError(f"{path}: {name} is not a weight of the model its config describes") from None
    current = getattr(owner, leaf, None)
    if not isinstance(current, torch.nn.Parameter) or current.shape != tensor.shape:
        raise ValueError(f"{path}: {name} does not fit the model its config describes")
    if name in linears:  # its bias, if any, was placed first (the names are sorted)
        parent_name, _, child = owner_name.rpartition(".")
        layer = packed[name] if name in packed else linear(tensor, owner.bias)
        setattr(model.get_submodule(parent_name), child, layer)
    else:
        setattr(owner, leaf, torch.nn.Parameter(tensor.float().clone() if tensor.is_floating_point() else tensor.clone(), requires_grad=False))
