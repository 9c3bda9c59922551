# shared by both device calls: where call 1 leaves what call 2 needs (SF_KEEP, SF_ROOT: for a rehearsal here)
K=${SF_KEEP:-/var/tmp/sf}; S=$K/site; R=${SF_ROOT:-/}
export PYTHONPATH=$S XDG_CACHE_HOME=$K/cache TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
