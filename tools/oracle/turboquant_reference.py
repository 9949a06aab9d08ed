#!/usr/bin/env python3
"""Reference codec for TurboQuant KV caches (Zandieh et al., 2025,
"TurboQuant: Online Vector Quantization with Near-optimal Distortion
Rate"), its MSE-optimal form, in numpy. mlx-cpp's C++ codec is held to it
bit for bit, so every step below is defined to the float32 operation:

1. A group of a head vector (its whole head dimension, or groups of 32,
   64 or 128 along it; a power of two) is multiplied by fixed random
   signs and rotated by the orthonormal Walsh-Hadamard transform:
   butterflies in float32, h = 1, 2, 4, ..., then a scale of
   float32(1 / sqrt(n)) computed in float64. The signs come from
   splitmix64(SIGN_SEED + i), bit 0 (1: negative).
2. Its norm: the float32 square root of the squares of the rotated
   values summed in float32 in index order. The rotated values divided
   by the norm lie on the unit sphere, where each coordinate has the
   density c (1 - x^2)^((n - 3) / 2) on [-1, 1].
3. Each coordinate is quantized to the nearest centroid of the
   Lloyd-Max quantizer of that density at b bits (2, 3, 4 or 8):
   codebook() computes it in float64 on a fixed grid, then rounds to
   float32; a code is the number of decision boundaries (float32
   midpoints of adjacent centroids) strictly below the value.
4. Codes are packed little-endian into uint32 words, value i at bits
   [i*b, (i+1)*b) of the stream (MLX's layout for 2, 4 and 8 bits); the
   norm is kept beside them in float32.

Decoding takes the centroids times the norm, rotates back (the same
transform: it is its own inverse) and applies the signs.

usage: turboquant_reference.py --out DIR   (goldens for the C++ tests, .npy)
       turboquant_reference.py --codebooks FILE   (the C++ codec's tables)
"""
import argparse
import json
from functools import lru_cache
from pathlib import Path

import numpy as np

SIGN_SEED = 0x7462_7571_616E_7421  # fixed: files and caches depend on it
BITS = (2, 3, 4, 8)
GROUPS = (32, 64, 128, 256)


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


@lru_cache(maxsize=None)
def signs(n):
    return np.array([-1.0 if splitmix64(SIGN_SEED + i) & 1 else 1.0 for i in range(n)],
                    dtype=np.float32)


def hadamard(values):
    """Orthonormal Walsh-Hadamard transform of the last axis, float32."""
    y = np.array(values, dtype=np.float32, copy=True)
    n = y.shape[-1]
    h = 1
    while h < n:
        y = y.reshape(*y.shape[:-1], n // (2 * h), 2, h)
        a, b = y[..., 0, :].copy(), y[..., 1, :].copy()
        y[..., 0, :] = a + b
        y[..., 1, :] = a - b
        y = y.reshape(*y.shape[:-3], n)
        h *= 2
    return y * np.float32(1.0 / np.sqrt(float(n)))


@lru_cache(maxsize=None)
def codebook(bits, n):
    """(centroids, boundaries), float32: the Lloyd-Max quantizer of a unit
    vector's coordinate in n dimensions."""
    grid = np.linspace(-1.0, 1.0, 200001)[1:-1]
    density = np.exp((n - 3) / 2.0 * np.log1p(-grid * grid))
    density /= density.sum()
    # Started where high-rate theory puts the levels (density^(1/3)
    # companding), then Lloyd's iterations.
    companded = np.cumsum(np.cbrt(density))
    companded /= companded[-1]
    levels = 1 << bits
    centroids = np.interp((np.arange(levels) + 0.5) / levels, companded, grid)
    for _ in range(300):
        edges = (centroids[1:] + centroids[:-1]) / 2
        cell = np.searchsorted(edges, grid)
        mass = np.bincount(cell, weights=density, minlength=levels)
        moment = np.bincount(cell, weights=density * grid, minlength=levels)
        centroids = np.where(mass > 0, moment / np.maximum(mass, 1e-300), centroids)
    centroids = centroids.astype(np.float32)
    boundaries = ((centroids[1:] + centroids[:-1]) / np.float32(2)).astype(np.float32)
    return centroids, boundaries


def pack(codes, bits):
    """Codes [..., n] → uint32 words [..., n * bits / 32]."""
    *lead, n = codes.shape
    flat = codes.reshape(-1, n).astype(np.uint64)
    words = np.zeros((flat.shape[0], n * bits // 32), dtype=np.uint64)
    for i in range(n):
        bit = i * bits
        word, shift = bit // 32, bit % 32
        words[:, word] |= (flat[:, i] << np.uint64(shift)) & np.uint64(0xFFFFFFFF)
        if shift + bits > 32:
            words[:, word + 1] |= flat[:, i] >> np.uint64(32 - shift)
    return words.astype(np.uint32).reshape(*lead, n * bits // 32)


def unpack(words, bits, n):
    *lead, _ = words.shape
    flat = words.reshape(-1, words.shape[-1]).astype(np.uint64)
    codes = np.zeros((flat.shape[0], n), dtype=np.uint64)
    mask = np.uint64((1 << bits) - 1)
    for i in range(n):
        bit = i * bits
        word, shift = bit // 32, bit % 32
        value = flat[:, word] >> np.uint64(shift)
        if shift + bits > 32:
            value |= flat[:, word + 1] << np.uint64(32 - shift)
        codes[:, i] = value & mask
    return codes.astype(np.uint32).reshape(*lead, n)


def encode(x, bits, group):
    """x [..., d] (d a multiple of group) → (words [..., d*bits/32] uint32,
    norms [..., d/group] float32)."""
    x = np.asarray(x, dtype=np.float32)
    *lead, d = x.shape
    groups = x.reshape(*lead, d // group, group)
    rotated = hadamard(groups * signs(group))
    squares = rotated * rotated
    norms = np.sqrt(np.add.accumulate(squares, axis=-1, dtype=np.float32)[..., -1])
    safe = np.where(norms > 0, norms, np.float32(1)).astype(np.float32)
    unit = rotated / safe[..., None]
    _, boundaries = codebook(bits, group)
    codes = np.searchsorted(boundaries, unit, side="left").astype(np.uint32)
    return pack(codes.reshape(*lead, d), bits), norms.astype(np.float32)


def decode(words, norms, bits, group, d):
    centroids, _ = codebook(bits, group)
    codes = unpack(words, bits, d)
    *lead, _ = codes.shape
    values = centroids[codes.reshape(*lead, d // group, group)] * norms[..., None]
    restored = hadamard(values.astype(np.float32)) * signs(group)
    return restored.reshape(*lead, d).astype(np.float32)


def write_codebooks(path):
    """The centroids of every (group, bits) as C++ hexadecimal floats: the
    C++ codec reads them as data (its tests check them against codebook())."""
    lines = ["// Generated by tools/oracle/turboquant_reference.py --codebooks: the",
             "// Lloyd-Max centroids of a unit vector's coordinate, per group size",
             "// and bits (TurboQuant's scalar quantizers). Do not edit.",
             "// clang-format off"]
    for group in GROUPS:
        for bits in BITS:
            centroids, _ = codebook(bits, group)
            values = ", ".join(float(c).hex() + "f" for c in centroids)
            lines.append(f"constexpr float kCentroids_g{group}_b{bits}[] = {{{values}}};")
    lines.append("// clang-format on")
    Path(path).write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--codebooks", type=Path)
    args = parser.parse_args()
    if args.codebooks:
        write_codebooks(args.codebooks)
        return
    if not args.out:
        parser.error("--out DIR or --codebooks FILE")
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20250428)
    cases, arrays = [], {}
    for group in GROUPS:
        for bits in BITS:
            x = (rng.standard_normal((3, 5, 2 * group)) * rng.uniform(0.1, 8.0)).astype(np.float32)
            x[0, 0] = 0.0  # a zero vector: norm 0, decodes to zeros
            words, norms = encode(x, bits, group)
            restored = decode(words, norms, bits, group, x.shape[-1])
            name = f"g{group}_b{bits}"
            centroids, boundaries = codebook(bits, group)
            arrays.update({f"{name}.x": x, f"{name}.words": words, f"{name}.norms": norms,
                           f"{name}.decoded": restored, f"{name}.centroids": centroids,
                           f"{name}.boundaries": boundaries})
            error = float(np.sum((restored - x) ** 2) / np.sum(x * x))
            cases.append({"name": name, "group": group, "bits": bits,
                          "relative_mse": error})
    for name, array in arrays.items():  # .npy files: MLX's loader reads them
        np.save(args.out / f"{name}.npy", array)
    (args.out / "manifest.json").write_text(json.dumps({"cases": cases,
                                                        "sign_seed": SIGN_SEED}, indent=1))
    for case in cases:
        print(f"{case['name']}: relative MSE {case['relative_mse']:.5f}")


if __name__ == "__main__":
    main()
