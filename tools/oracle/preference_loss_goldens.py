#!/usr/bin/env python3
"""Goldens for the preference losses (DPO, ORPO), from an implementation
of the papers' formulas in numpy alone (float64), independent of MLX and
of mlx-cpp's code, on fixed random logits.

A batch holds pairs of rows: row 2i a prompt with its chosen answer, row
2i + 1 with the rejected one; each row's next-token targets are scored
where its mask is 1 (the answer). For each case --out/goldens.json holds
the policy's and the reference's logits [rows, L, vocab], the targets
[rows, L], the mask, beta and the expected losses:

  DPO (Rafailov et al. 2023, sigmoid loss), log pi = sum of the scored
  tokens' log-probabilities:
      mean over pairs of -log sigmoid(beta * ((pi_c - ref_c) - (pi_r - ref_r)))
  ORPO (Hong et al. 2024), l = mean of the scored tokens' log-probabilities:
      NLL(chosen) + beta * mean over pairs of -log sigmoid(log_odds),
      log_odds = (l_c - l_r) - (log(1 - exp l_c) - log(1 - exp l_r)),
      NLL(chosen) = -(sum of the chosen rows' scored log-probabilities)
                    / (their number of scored tokens)
"""
import argparse
import json
from pathlib import Path

import numpy as np


def log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def answer_log_probs(logits, targets, mask):
    picked = np.take_along_axis(log_softmax(logits), targets[..., None], axis=-1)[..., 0]
    return (picked * mask).sum(axis=1), mask.sum(axis=1)


def log_sigmoid(x):
    return -np.logaddexp(0.0, -x)


def dpo(policy, reference, targets, mask, beta):
    pi, _ = answer_log_probs(policy, targets, mask)
    ref, _ = answer_log_probs(reference, targets, mask)
    margin = (pi[0::2] - ref[0::2]) - (pi[1::2] - ref[1::2])
    return float(np.mean(-log_sigmoid(beta * margin)))


def orpo(policy, targets, mask, beta):
    sums, counts = answer_log_probs(policy, targets, mask)
    mean = sums / counts
    chosen, rejected = mean[0::2], mean[1::2]
    log_odds = (chosen - rejected) - (np.log1p(-np.exp(chosen)) - np.log1p(-np.exp(rejected)))
    nll = -sums[0::2].sum() / counts[0::2].sum()
    return float(nll + beta * np.mean(-log_sigmoid(log_odds)))


def case(rng, pairs, length, vocab, beta, spread):
    rows = 2 * pairs
    policy = (spread * rng.standard_normal((rows, length, vocab))).astype(np.float32)
    reference = (policy + 0.3 * rng.standard_normal(policy.shape)).astype(np.float32)
    targets = rng.integers(0, vocab, (rows, length)).astype(np.int32)
    mask = np.zeros((rows, length), np.float32)
    for row in range(rows):  # a prompt of 1-3 tokens, then an answer to a ragged end
        start = int(rng.integers(1, 4))
        end = int(rng.integers(start + 1, length + 1))
        mask[row, start:end] = 1
    # float64 from the float32 values the C++ side reads
    p64, r64 = policy.astype(np.float64), reference.astype(np.float64)
    return {
        "beta": beta, "shape": [rows, length, vocab],
        "policy": policy.ravel().tolist(), "reference": reference.ravel().tolist(),
        "targets": targets.ravel().tolist(), "mask": mask.ravel().tolist(),
        "dpo": dpo(p64, r64, targets, mask, beta), "orpo": orpo(p64, targets, mask, beta),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    rng = np.random.default_rng(20261206)
    cases = {
        "two_pairs": case(rng, 2, 6, 11, 0.1, 1.0),
        "four_pairs_steep": case(rng, 4, 9, 17, 0.5, 3.0),
        "one_pair_large_beta": case(rng, 1, 5, 7, 2.0, 0.5),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "goldens.json").write_text(json.dumps(cases))


if __name__ == "__main__":
    main()
