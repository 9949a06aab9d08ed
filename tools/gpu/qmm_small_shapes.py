#!/usr/bin/env python3
"""MLX's quantized matmul on the GPU at small shapes, against the same
product from dequantized weights.

The first GPU run of the parity oracle found mlx-lm's 4-bit checkpoints of
hidden size 64 producing NaN logits on the GPU. This isolates the op: for
each shape (rows M, input K, output N), width and group size it compares
mx.quantized_matmul with x @ dequantize(w).T, both on the GPU and on the CPU,
and prints every case with a NaN or an error of 10 % of the largest output
(garbage: bfloat16 accumulation on the CPU alone reaches a few %).

usage: tools/gpu/qmm_small_shapes.py   (on a machine with MLX's CUDA backend)
"""
import itertools

import mlx.core as mx


def check(m, k, n, group_size, bits, dtype, device):
    mx.random.seed(m * 1000 + k + n)
    w = (mx.random.normal((n, k)) * 0.05).astype(dtype)
    x = mx.random.normal((m, k)).astype(dtype)
    with mx.stream(device):
        wq, scales, biases = mx.quantize(w, group_size, bits)
        ours = mx.quantized_matmul(x, wq, scales, biases, True, group_size, bits)
        dense = mx.dequantize(wq, scales, biases, group_size, bits).astype(mx.float32)
        exact = x.astype(mx.float32) @ dense.T
        mx.eval(ours, exact)
    ours = ours.astype(mx.float32)
    nan = bool(mx.any(mx.isnan(ours)).item())
    error = mx.max(mx.abs(ours - exact)).item()
    scale = mx.max(mx.abs(exact)).item()
    return nan, error, scale


def main():
    failures = 0
    cases = itertools.product([1, 2, 4, 7, 8, 9, 16, 33, 64], [64, 128, 256], [64, 128, 512],
                              [32, 64], [4, 8], [mx.bfloat16, mx.float32])
    for m, k, n, group_size, bits, dtype in cases:
        for device in (mx.gpu, mx.cpu):
            nan, error, scale = check(m, k, n, group_size, bits, dtype, device)
            bad = nan or error > 0.1 * max(scale, 1e-3)  # garbage, not rounding
            if bad:
                failures += 1
                print(f"{'gpu' if device == mx.gpu else 'cpu'} M={m} K={k} N={n} "
                      f"group={group_size} bits={bits} {dtype}: nan={nan} "
                      f"max error {error:.4g} of max |y| {scale:.4g}", flush=True)
    print(f"{failures} cases off")


if __name__ == "__main__":
    main()
