#!/bin/bash
# Packs what a bare GPU machine with no network needs to train the embedded model, for the device
# tool of this workplace (64 MiB a call, the working tree included): the base's GGUF (xz, in two
# halves), the training documentation, and the wheels its Python lacks. Run here, in the repo root;
# then call 1 carries .gpu/a and runs prep.sh, call 2 (within the machine's 30 s warm time) carries
# .gpu/b and runs train.sh MINUTES. See docs/training.md, session 28.
set -eu
gguf=$(.venv/bin/python -c "from sfumato.model.lm_base import gguf_path; print(gguf_path())")
rm -rf .gpu && mkdir -p .gpu/a .gpu/b
grep -qx "/.gpu/" .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo "/.gpu/" >> .git/info/exclude; }
.venv/bin/pip download -q --no-deps --only-binary=:all: -d .gpu/a gguf==0.19.0 peft==0.21.2
(cd / && tar cf - usr/share/doc/python3-doc/html/_sources usr/share/doc/sphinx-doc/html/_sources \
  usr/share/doc/python-requests-doc/html/_sources usr/share/doc/python-django-doc/html) | xz -T2 -6 > .gpu/a/docs.tar.xz
sha256sum "$gguf" | cut -c1-64 > .gpu/b/gguf.sha256
xz -T2 -6 -c "$gguf" > .gpu/gguf.xz
tree=$(git ls-files -z | xargs -0 stat -c %s | awk '{s += $1} END {print s}')
first=$(( 64 * 1048576 - tree - $(du -cb .gpu/a | tail -1 | cut -f1) - 2000000 ))
head -c $first .gpu/gguf.xz > .gpu/a/gguf.xz.0 && tail -c +$(( first + 1 )) .gpu/gguf.xz > .gpu/b/gguf.xz.1 && rm .gpu/gguf.xz
du -cb .gpu/a .gpu/b
