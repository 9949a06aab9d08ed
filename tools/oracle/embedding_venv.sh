#!/usr/bin/env bash
# The embedding oracle's venv (deps/embedding-oracle.txt: sentence-transformers
# on PyTorch, several GB, so kept out of .venv) under the build directory,
# made once per pin set (embedding_goldens.sh asks for it).
#
# usage: embedding_venv.sh BUILD_DIR   (prints the venv's path)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
requirements="$here/../../deps/embedding-oracle.txt"
venv="$1/embedding-oracle-venv"
stamp="$venv/.requirements.sha256"
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[embedding_venv] making $venv" >&2
  rm -rf "$venv"
  mkdir -p "$1"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-compile -r "$requirements"
  echo "$want" >"$stamp"
fi
echo "$venv"
