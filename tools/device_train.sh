#!/usr/bin/env bash
# One prepared training run of a larger embedded model on a lent GPU (the device tool's H200),
# for a session that draws one. It trains for MINUTES of training time, then returns the model,
# exported in fp16, as a tar split into 15 MB parts (the device returns at most 8 files of 16 MiB)
# and the run's log.jsonl.
#
# Here, once (the device image has transformers 5.17; DiffusionGemma needs 5.24):
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: -d .whl transformers==5.24.0
# Through the device tool: run(command="bash tools/device_train.sh", carry=[".whl"], timeout_s=600)
# Back here:
#   mkdir -p checkpoints/gpu-hf && cat <files_at>/model.tar.part-* | tar -x -C checkpoints/gpu-hf
#   python -m sfumato.model.training.evaluate checkpoints/gpu-hf --part dev --tune --out runs/gpu-dev.json
#
# A dry run on the CPU: DEVICE=cpu DTYPE=fp32 MINUTES=0.2 WORKERS=1 BATCH=8 OUT=/tmp/out bash tools/device_train.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?the device tool sets OUT, the folder whose files come back}"
# 6 training minutes: reading the device's large site-packages (twice: train and dev split), the
# dev evaluations and the export also take time, and one command may run 10 minutes at most.
DEVICE=${DEVICE:-cuda} DTYPE=${DTYPE:-bf16} MINUTES=${MINUTES:-6} WORKERS=${WORKERS:-14} BATCH=${BATCH:-256}
PYTHON=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
if [ -d .whl ]; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site
fi
# The project is not installed here: app/ and model/ become importable as sfumato.app and
# sfumato.model (the names pyproject.toml's package-dir installs them under) through links.
IMPORT_ROOT=$(mktemp -d)
mkdir "$IMPORT_ROOT/sfumato" && ln -s "$PWD/app" "$IMPORT_ROOT/sfumato/app" && ln -s "$PWD/model" "$IMPORT_ROOT/sfumato/model"
export PYTHONPATH="$IMPORT_ROOT${PYTHONPATH:+:$PYTHONPATH}"
RUN=$(mktemp -d)
# 10M parameters: a denoising pass takes ~20 ms at 512 tokens of context on the 2-core CPU
# the editor is measured on (the 2.4M shipped model: ~9 ms). Context 256 tokens, canvas 32.
"$PYTHON" -m sfumato.model.training.train --out "$RUN" --device "$DEVICE" --dtype "$DTYPE" --workers "$WORKERS" \
  --hidden 256 --layers 6 --heads 4 --head-dim 64 --ffn 1024 --prompt 256 --canvas 32 \
  --batch "$BATCH" --lr 2e-3 --warmup 300 --noise mask --ar-weight 0.5 \
  --budget-minutes "$MINUTES" --eval-every 500 --save-minutes 1000 > "$RUN/train.log" 2>&1 \
  || { tail -c 4000 "$RUN/train.log"; exit 1; }
cp "$RUN/log.jsonl" "$OUT/"
tail -c 1500 "$RUN/train.log" | tr '\r' '\n' | tail -n 2
"$PYTHON" -m sfumato.model.training.train --out "$RUN" --export "$RUN/model" --no-joint-gaps
tar -C "$RUN/model" -cf - . | split -b 15m - "$OUT/model.tar.part-"
tail -n 3 "$OUT/log.jsonl"
ls -l "$OUT"
