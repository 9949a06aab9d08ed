#!/usr/bin/env python3
"""Writes small synthetic GGUF files covering every supported tensor type and
every metadata value type, plus float32 goldens from the `gguf` package's own
reader and dequantizer (gguf.GGUFReader + gguf.quants.dequantize).

Output (under --out):
  manifest.json              files, tensors (name, type, shape, golden file),
                             metadata as GGUFReader reports it
  <type>.gguf                one file per GGML type
  <type>.<tensor>.f32        little-endian float32 goldens
  metadata_v2.gguf / metadata_v3.gguf  every value type, nested arrays
"""
import argparse
import json
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

LEGACY = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0]
K_QUANTS = [T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K]

# Byte offsets of the float16 scale fields inside one block, per type: random
# block bytes get finite scales there so goldens hold no NaN/inf.
HALF_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}


def random_blocks(rng, qtype, rows, cols):
    """Random block bytes (every bit pattern of the quants) with finite scales:
    ordinary, zero, negative and subnormal float16 values."""
    block_size, type_size = GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, size=(rows * cols // block_size, type_size), dtype=np.uint8)
    choices = np.array([0.0, 6e-8, -3e-5, 1e-3, -0.02, 0.5, 7.0], dtype=np.float16)
    if qtype == T.Q8_K:
        scales = rng.normal(0, 0.05, size=blocks.shape[0]).astype(np.float32)
        blocks[:, 0:4] = scales.view(np.uint8).reshape(-1, 4)
    for offset in HALF_FIELDS.get(qtype, []):
        halves = np.where(rng.random(blocks.shape[0]) < 0.2,
                          rng.choice(choices, blocks.shape[0]),
                          rng.normal(0, 0.01, blocks.shape[0])).astype(np.float16)
        blocks[:, offset:offset + 2] = halves.view(np.uint8).reshape(-1, 2)
    return blocks.reshape(rows, -1)


def q8_k_reference(blocks):
    """gguf.quants has no Q8_K decoder; ggml's dequantize_row_q8_K is d * q."""
    d = blocks[:, 0:4].copy().view(np.float32)
    q = blocks[:, 4:260].view(np.int8).astype(np.float32)
    return (d * q).reshape(-1)


def dense_tensors(rng, qtype):
    values = rng.normal(0, 1, size=(3, 64)).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, 1e-40, -6e-8, 65504.0, 3.0e38],
                        dtype=np.float32)
    values[0, :8] = specials
    if qtype == T.F32:
        return {"matrix": values, "vector": rng.normal(0, 1, 37).astype(np.float32)}
    if qtype == T.F16:
        halves = values.astype(np.float16)
        return {"matrix": halves, "vector": rng.normal(0, 1, 37).astype(np.float16)}
    raw = gguf.quants.quantize(values, T.BF16)  # uint8 bytes, two per value
    return {"matrix": (raw, T.BF16)}


def quant_tensors(rng, qtype):
    block_size = GGML_QUANT_SIZES[qtype][0]
    tensors = {"random_blocks": (random_blocks(rng, qtype, 4, 2 * block_size), qtype),
               "one_row": (random_blocks(rng, qtype, 1, block_size), qtype)}
    if qtype in LEGACY:
        values = rng.normal(0, 0.05, size=(5, 4 * block_size)).astype(np.float32)
        tensors["quantized"] = (gguf.quants.quantize(values, qtype), qtype)
    return tensors


def write_type_file(out, rng, qtype, manifest):
    path = out / f"{qtype.name}.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    tensors = dense_tensors(rng, qtype) if qtype in (T.F32, T.F16, T.BF16) else \
        quant_tensors(rng, qtype)
    for name, tensor in tensors.items():
        if isinstance(tensor, tuple):
            writer.add_tensor(name, tensor[0], raw_dtype=tensor[1])
        else:
            writer.add_tensor(name, tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    entries = []
    reader = gguf.GGUFReader(str(path))
    for tensor in reader.tensors:
        if tensor.tensor_type == T.Q8_K:
            values = q8_k_reference(np.asarray(tensor.data).reshape(-1, 292))
        else:
            values = gguf.quants.dequantize(np.asarray(tensor.data), tensor.tensor_type)
        values = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
        golden = f"{qtype.name}.{tensor.name}.f32"
        values.tofile(out / golden)
        entries.append({"name": tensor.name, "type": int(tensor.tensor_type),
                        "type_name": tensor.tensor_type.name,
                        "shape": [int(d) for d in reversed(tensor.shape)],
                        "golden": golden})
    manifest["files"].append({"gguf": path.name, "tensors": entries})


NESTED = [[1, 2, 3], [4, 5]]


def write_metadata_file(out, version):
    path = out / f"metadata_v{version}.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    V = gguf.GGUFValueType
    writer.add_uint8("test.uint8", 200)
    writer.add_int8("test.int8", -100)
    writer.add_uint16("test.uint16", 65000)
    writer.add_int16("test.int16", -32000)
    writer.add_uint32("test.uint32", 4_000_000_000)
    writer.add_int32("test.int32", -2_000_000_000)
    writer.add_float32("test.float32", 0.1)
    writer.add_uint64("test.uint64", 2**63 + 5)
    writer.add_int64("test.int64", -(2**62))
    writer.add_float64("test.float64", 2.718281828459045)
    writer.add_bool("test.bool_true", True)
    writer.add_bool("test.bool_false", False)
    writer.add_string("test.string", "héllo wörld ✓")
    writer.add_key_value("test.array_int32", [1, -2, 3], V.ARRAY, sub_type=V.INT32)
    writer.add_key_value("test.array_float32", [0.5, -1.25], V.ARRAY, sub_type=V.FLOAT32)
    writer.add_array("test.array_string", ["a", "", "ß"])
    writer.add_key_value("test.array_bool", [True, False], V.ARRAY, sub_type=V.BOOL)
    writer.add_key_value("test.nested", NESTED, V.ARRAY, sub_type=V.ARRAY)
    writer.add_uint32("general.alignment", 64)
    writer.add_tensor("weight", np.arange(64, dtype=np.float32).reshape(2, 32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    if version == 2:  # v2 and v3 share the little-endian layout; only the field differs
        data = bytearray(path.read_bytes())
        data[4:8] = (2).to_bytes(4, "little")
        path.write_bytes(bytes(data))
    reader = gguf.GGUFReader(str(path))
    metadata = {}
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        metadata[key] = NESTED if key == "test.nested" else field.contents()
    return {"gguf": path.name, "version": version, "alignment": int(reader.alignment),
            "data_offset": int(reader.data_offset), "metadata": metadata,
            "tensor_count": len(reader.tensors)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20260101)
    manifest = {"gguf_version": gguf.__version__ if hasattr(gguf, "__version__") else "",
                "files": [], "metadata_files": []}
    for qtype in [T.F32, T.F16, T.BF16] + LEGACY + K_QUANTS:
        write_type_file(args.out, rng, qtype, manifest)
    for version in (2, 3):
        manifest["metadata_files"].append(write_metadata_file(args.out, version))
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
