# device calls between the first and the last: keep the part of the base's GGUF this call carries
set -u; . packaging/device/env.sh
[ -f $K/base.txt ] || { echo "call 1's files are gone: a fresh machine"; exit 3; }
cp .gpu/*/gguf.xz.* $K/ && ls $K
