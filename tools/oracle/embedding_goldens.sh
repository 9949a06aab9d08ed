#!/usr/bin/env bash
# The embedding oracle's venv (deps/embedding-oracle.txt: sentence-transformers
# on PyTorch, several GB, so kept out of .venv) under the build directory,
# made once per pin set, then tools/oracle/embedding_goldens.py with it.
#
# usage: embedding_goldens.sh BUILD_DIR MLX_CPP MODEL_NAME TEXTS RETRIEVAL OUT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$1
model=$("$2" models --path "$3")
shift 3
requirements="$here/../../deps/embedding-oracle.txt"
venv="$build/embedding-oracle-venv"
stamp="$venv/.requirements.sha256"
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[embedding_goldens] making $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-compile -r "$requirements"
  echo "$want" >"$stamp"
fi
exec "$venv/bin/python" "$here/embedding_goldens.py" --model "$model" --texts "$1" \
  --retrieval "$2" --out "$3"
