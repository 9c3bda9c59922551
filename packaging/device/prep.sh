# device call 1: keep the base's first part, install the wheels and the documentation, smoke-test the batched loss on the GPU
set -u; . packaging/device/env.sh
mkdir -p $K $S/sfumato $XDG_CACHE_HOME
cp .gpu/a/gguf.xz.0 .gpu/a/base.txt $K/ || exit 3
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $S .gpu/a/*.whl || exit 4
xz -dc .gpu/a/docs.tar.xz | tar x -C $R || exit 5
mkdir -p $S/$(sed -n 3p $K/base.txt) && touch $S/$(sed -n 3p $K/base.txt)/__init__.py  # found, never imported
ln -sfn $PWD/app $S/sfumato/app; ln -sfn $PWD/model $S/sfumato/model
python3 packaging/device/smoke.py
