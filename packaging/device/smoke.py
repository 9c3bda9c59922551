"""Device call 1 (prep.sh): the stack's versions, the corpus this machine offers, and one batched training step on the GPU."""
import importlib.metadata
import random
import time
from types import SimpleNamespace

import peft
import torch
import transformers
from peft import LoraConfig, get_peft_model
from sfumato.model.training.batches import batch_loss, collate
from sfumato.model.training.corpus import missing_documentation
from sfumato.model.training.examples import Example
from sfumato.model.training.lm_corpus import files_by_unit
from transformers import LlamaConfig, LlamaForCausalLM

dev = "cuda" if torch.cuda.is_available() else "cpu"
print("torch", torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU", "transformers", transformers.__version__, "peft", peft.__version__,
      "gguf", importlib.metadata.version("gguf"))
print("missing documentation:", missing_documentation())
t = time.time(); units = files_by_unit("train")
print("train units", len(units), "files", sum(map(len, units.values())), "in", round(time.time() - t, 1), "s")
lm = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=2)).to(dev)
model = get_peft_model(lm, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
special = SimpleNamespace(mask=0, prefix_mark=1, end=2, start=None, opening=[3])
rng = random.Random(0)
def example(p, c):
    prompt = [3, 1] + [rng.randrange(4, 64) for _ in range(p - 2)]
    target = [rng.randrange(4, 64) for _ in range(c)]
    return Example(prompt + [0] * c, p, target, [1.0] * c)
batch = {k: v.to(dev) for k, v in collate([example(40, 16), example(70, 32)], special, distill=True).items()}
with torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda"):
    loss = batch_loss(model, batch, 0.5)
loss.backward()
print("smoke loss", loss.item(), "grad", sum(p.grad.abs().sum().item() for p in model.parameters() if p.grad is not None))
