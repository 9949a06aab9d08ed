#!/usr/bin/env bash
# tools/oracle/embedding_goldens.py in the embedding oracle's venv
# (embedding_venv.sh), made first where it is missing.
#
# usage: embedding_goldens.sh BUILD_DIR MLX_CPP MODEL_NAME TEXTS RETRIEVAL OUT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv=$("$here/embedding_venv.sh" "$1")
model=$("$2" models --path "$3")
shift 3
exec "$venv/bin/python" "$here/embedding_goldens.py" --model "$model" --texts "$1" \
  --retrieval "$2" --out "$3"
