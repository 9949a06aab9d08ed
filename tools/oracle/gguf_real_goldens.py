#!/usr/bin/env python3
"""Dequantization goldens for the real models in the model cache.

For every model recorded in the cache registry ($MLX_CPP_HOME or
~/.cache/mlx-cpp), dequantizes every tensor of its GGUF with the `gguf`
package (gguf.quants.dequantize, a few thousand rows at a time to bound
memory) and records the sha256 of the float32 little-endian bytes, which the
C++ dequantizer must reproduce bit for bit. A file `unavailable.txt` written
by the pull fixture (no network) is copied so the tests can skip with its
reason.

Output: --out/manifest.json {"models": [{name, gguf, tensors: [...]}]}
"""
import argparse
import hashlib
import json
import os
from pathlib import Path

import gguf
import numpy as np

ROWS_PER_CHUNK = 4096


def cache_root():
    home = os.environ.get("MLX_CPP_HOME")
    return Path(home) if home else Path.home() / ".cache" / "mlx-cpp"


def tensor_digest(tensor):
    digest = hashlib.sha256()
    data = np.asarray(tensor.data)
    rows = data.reshape(-1, data.shape[-1]) if data.ndim > 1 else data.reshape(1, -1)
    for start in range(0, rows.shape[0], ROWS_PER_CHUNK):
        chunk = gguf.quants.dequantize(rows[start:start + ROWS_PER_CHUNK], tensor.tensor_type)
        digest.update(np.ascontiguousarray(chunk, dtype="<f4").tobytes())
    return digest.hexdigest()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    registry_path = cache_root() / "registry.json"
    registry = json.loads(registry_path.read_text()) if registry_path.exists() else {}
    manifest = {"cache": str(cache_root()), "models": []}
    for name, record in sorted(registry.items()):
        if not record["gguf"].endswith(".gguf"):
            continue  # a zipped checkpoint (an embedding model): nothing to dequantize
        reader = gguf.GGUFReader(record["gguf"])
        tensors = [{"name": t.name, "type": int(t.tensor_type), "type_name": t.tensor_type.name,
                    "shape": [int(d) for d in reversed(t.shape)], "sha256": tensor_digest(t)}
                   for t in reader.tensors]
        manifest["models"].append({"name": name, "gguf": record["gguf"],
                                   "directory": record["directory"], "tensors": tensors})
        print(f"{name}: {len(tensors)} tensors")
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
