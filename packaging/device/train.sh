# the last device call: join the base, train (SmolLM2: from the shipped adapter; another base: a new lineage
# from the base itself), bring back snapshots and the final adapter.
# train.sh MINUTES [adapt options, which override the recipe's]
set -u; . packaging/device/env.sh
O=${OUT:-/tmp/out}; W=$K/run
[ -f $K/base.txt ] || { echo "call 1's files are gone: a fresh machine"; exit 3; }
cp .gpu/*/gguf.xz.* $K/; G=$K/$(sed -n 2p $K/base.txt); mkdir -p $(dirname $G)
ls $K/gguf.xz.* | sort -V | xargs cat | xz -dc > $G && [ "$(sha256sum $G | cut -c1-64)" = "$(sed -n 4p $K/base.txt)" ] \
  || { echo "the base did not join (a part missing: a call between the first and this one?)"; exit 4; }
keep() { for d in $W/snapshot-*; do [ -f $d/training.json ] && [ ! -f $O/${d##*/}.safetensors ] && cp $d/adapter_model.safetensors $O/${d##*/}.safetensors; done; }
( while sleep 5; do keep; nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader >> $O/gpu.log 2>&1; done ) & watcher=$!
timeout 515 python3 -m sfumato.model.training.adapt --out $W --base $(sed -n 1p $K/base.txt) --rank 24 --batch ${SF_BATCH:-128} --accumulate 1 \
  --workers ${SF_WORKERS:-14} --threads 4 --causal 0.5 --distill 0.5 --lr 4e-4 --anneal --seed 40 --minutes $1 \
  --snapshot-minutes $(python3 -c "print($1 / 3)") --save-every 200 "${@:2}" 2>&1 | grep --line-buffered -v Warning | tee $O/train.log
kill $watcher; keep
python3 -m sfumato.model.training.adapt --export $W/last $W/final && cp $W/final/adapter_model.safetensors $O/final.safetensors \
  && cp $W/final/adapter_config.json $W/final/training.json $O/
ls -la $O
