#!/usr/bin/env bash
# One prepared check of --quantize on a lent GPU (the device tool's H200), for a session that
# draws one: a random DiffusionGemma with the released 26B-A4B checkpoint's layer shapes but
# LAYERS layers (6 of 30: ~11 GB in bf16) is loaded in bf16, int8, int4 and nf4 through the
# editor's loader; per precision the weights' GB (and the estimate from the config), the peak GPU
# memory, one decoder pass over a 256-token canvas, and agreement with bf16. Returns precision.json
# and the log; the table at the end of the log goes to the closing note and README's Performance.
#
# Here, once (the device image has transformers 5.17; DiffusionGemma needs 5.24; the quantization
# libraries are the `gpu` extra, ~60 MB of wheels in all, within the 64 MiB carry):
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: -d .whl transformers==5.24.0 torchao==0.18.0 bitsandbytes==0.50.2
# Through the device tool: run(command="bash tools/device_quantize.sh", carry=[".whl"], timeout_s=600)
#
# A dry run on the CPU (1 layer, 4 experts; int4 and nf4 need CUDA):
#   DEVICE=cpu LAYERS=1 EXPERTS=4 PRECISIONS=none,int8 REPEATS=1 OUT=/tmp/out bash tools/device_quantize.sh
# (the 262,144-token output head alone makes a CPU pass take seconds)
set -euo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?the device tool sets OUT, the folder whose files come back}"
DEVICE=${DEVICE:-cuda:0} LAYERS=${LAYERS:-6} EXPERTS=${EXPERTS:-128} PRECISIONS=${PRECISIONS:-none,int8,int4,nf4} REPEATS=${REPEATS:-10}
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
"$PYTHON" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
"$PYTHON" tools/precision_check.py --device "$DEVICE" --layers "$LAYERS" --experts "$EXPERTS" \
  --precisions "$PRECISIONS" --repeats "$REPEATS" --out "$OUT/precision.json" 2>&1 | grep -v "^Loading weights" | tee "$OUT/precision.log"
