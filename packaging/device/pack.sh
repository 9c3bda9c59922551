#!/bin/bash
# Packs what a bare GPU machine with no network needs to train the embedded model, for the device
# tool of this workplace (64 MiB a call, the working tree included): a base's GGUF (xz, in parts),
# the training documentation, and the wheels its Python lacks. Run here, in the repo root:
#   bash packaging/device/pack.sh [BASE]     (smollm2-135m-instruct, the default, or gemma3-270m)
# then make the calls it prints, each within the 30 s the machine stays warm after the one before:
# call 1 carries .gpu/a and runs prep.sh, the middle ones carry a part each and run keep.sh, the
# last carries the last part and runs train.sh MINUTES. See docs/training.md, sessions 28 and 30.
set -eu
base=${1:-smollm2-135m-instruct}
read -r gguf dest package < <(.venv/bin/python -c "from sfumato.model.lm_base import BASES, gguf_path
b = BASES['$base']
print(gguf_path(b), ('cache/sfumato/' if b.in_parts else 'site/' + b.package + '/') + b.gguf_file, b.package)")
rm -rf .gpu && mkdir -p .gpu/a
grep -qx "/.gpu/" .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo "/.gpu/" >> .git/info/exclude; }
.venv/bin/pip download -q --no-deps --only-binary=:all: -d .gpu/a gguf==0.19.0 peft==0.21.2
(cd / && tar cf - usr/share/doc/python3-doc/html/_sources usr/share/doc/sphinx-doc/html/_sources \
  usr/share/doc/python-requests-doc/html/_sources usr/share/doc/python-django-doc/html) | xz -T2 -6 > .gpu/a/docs.tar.xz
# what train.sh reads: the base's name, where its GGUF goes (under SF_KEEP), its package, its sha256
printf '%s\n%s\n%s\n%s\n' "$base" "$dest" "$package" "$(sha256sum "$gguf" | cut -c1-64)" > .gpu/a/base.txt
xz -T2 -6 -c "$gguf" > .gpu/gguf.xz
tree=$(git ls-files -z | xargs -0 stat -c %s | awk '{s += $1} END {print s}')
room=$(( 64 * 1048576 - tree - 2000000 ))
first=$(( room - $(du -cb .gpu/a | tail -1 | cut -f1) ))
head -c $first .gpu/gguf.xz > .gpu/a/gguf.xz.0
tail -c +$(( first + 1 )) .gpu/gguf.xz | split -b $room -d -a 1 - .gpu/part.
rm .gpu/gguf.xz
calls=(a)
for part in .gpu/part.*; do
  i=$(( ${part##*.} + 1 )); dir=.gpu/$(printf "\\x$(printf %x $(( 97 + i )))")
  mkdir -p $dir && mv $part $dir/gguf.xz.$i && calls+=(${dir#.gpu/})
done
du -cb .gpu/* | tail -1
echo "call 1: bash packaging/device/prep.sh, carry [\".gpu/a\"]"
for (( n = 1; n < ${#calls[@]} - 1; n++ )); do echo "call $(( n + 1 )): bash packaging/device/keep.sh, carry [\".gpu/${calls[n]}\"]"; done
echo "call ${#calls[@]}: bash packaging/device/train.sh MINUTES [adapt options], carry [\".gpu/${calls[-1]}\"]"
