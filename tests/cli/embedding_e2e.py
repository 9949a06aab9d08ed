#!/usr/bin/env python3
"""EmbeddingGemma through `mlx-cpp embed` against sentence-transformers.

Goldens: tools/oracle/embedding_goldens.py (sentence-transformers on the CPU,
float32). Checks, on the fast path (the default; inputs of similar lengths
share a padded forward):
  * every line of tests/data/embedding_texts.txt (210 texts, three of them
    longer than the sliding layers' window on both sides): cosine similarity
    with the oracle's embedding >= 0.9999, and unit length;
  * a text embedded alone gets the vector it gets among the others;
  * the retrieval set (queries with the "query" prompt, documents with the
    "document" prompt): each query's three nearest documents, in order, as
    the oracle ranks them;
  * --dimensions 256: the oracle's truncated embeddings, normalized;
  * the stock kernels (MLX's ops) on the first texts, to the same bound;
  * the token ids of the first texts equal the oracle tokenizer's;
  * a decoder command on the encoder, bad flags: one-line errors.
usage: embedding_e2e.py MLX_CPP GOLDENS_DIR TEXTS RETRIEVAL
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

MODEL = "embeddinggemma-300m"
MIN_COSINE = 0.9999


def embed(mlx_cpp, texts, *flags):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=False) as file:
        file.write("\n".join(texts) + "\n")
    result = subprocess.run([mlx_cpp, "embed", "-m", MODEL, "--file", file.name, *flags],
                            capture_output=True, text=True, check=True)
    Path(file.name).unlink()
    print("      " + result.stderr.strip().splitlines()[-1])
    return np.array([json.loads(line) for line in result.stdout.splitlines()], dtype=np.float64)


def cosines(a, b):
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


class Checks:
    def __init__(self):
        self.failed = []

    def check(self, name, condition, detail=""):
        print(("PASS " if condition else "FAIL ") + name + (f" ({detail})" if detail else ""))
        if not condition:
            self.failed.append(name)


def main():
    mlx_cpp, goldens = sys.argv[1], Path(sys.argv[2])
    texts = [line for line in Path(sys.argv[3]).read_text(encoding="utf-8").splitlines() if line]
    retrieval = json.loads(Path(sys.argv[4]).read_text(encoding="utf-8"))
    checks = Checks()

    oracle = np.load(goldens / "texts.npy")
    ours = embed(mlx_cpp, texts)
    checks.check("one embedding per text", ours.shape == oracle.shape, f"{ours.shape}")
    similarity = cosines(ours, oracle)
    worst = int(similarity.argmin())
    checks.check(f"{len(texts)} texts: cosine >= {MIN_COSINE}", similarity.min() >= MIN_COSINE,
                 f"lowest {similarity.min():.8f} at line {worst + 1}, mean {similarity.mean():.8f}")
    # Inputs of similar lengths share a forward (padded, masked): a text
    # alone gets the vector it gets among the others, up to float32 rounding.
    for index in (0, 100, 207):
        alone = embed(mlx_cpp, [texts[index]])[0]
        difference = np.abs(alone - ours[index]).max()
        checks.check(f"line {index + 1} alone: the vector it gets among the others",
                     difference < 1e-5, f"max difference {difference:.2e}")
    norms = np.linalg.norm(ours, axis=1)
    checks.check("unit length", np.abs(norms - 1).max() < 1e-5, f"{np.abs(norms - 1).max():.2e}")

    queries = embed(mlx_cpp, retrieval["queries"], "--prompt-name", "query")
    documents = embed(mlx_cpp, retrieval["documents"], "--prompt-name", "document")
    oracle_queries = np.load(goldens / "queries.npy")
    oracle_documents = np.load(goldens / "documents.npy")
    checks.check("queries and documents: cosine >= bound",
                 min(cosines(queries, oracle_queries).min(),
                     cosines(documents, oracle_documents).min()) >= MIN_COSINE)
    ours_ranking = np.argsort(-(queries @ documents.T), axis=1)[:, :3]
    oracle_ranking = np.argsort(-(oracle_queries @ oracle_documents.T), axis=1)[:, :3]
    checks.check("each query's three nearest documents, in order",
                 (ours_ranking == oracle_ranking).all(),
                 f"ours {ours_ranking.tolist()} oracle {oracle_ranking.tolist()}")
    checks.check("each query finds its own document first",
                 (ours_ranking[:, 0] == np.arange(len(retrieval["queries"]))).all())

    shorter = embed(mlx_cpp, texts[:20], "--dimensions", "256")
    checks.check("--dimensions 256: 256 values, unit length",
                 shorter.shape == (20, 256) and np.abs(np.linalg.norm(shorter, axis=1) - 1).max()
                 < 1e-5)
    checks.check("--dimensions 256: the oracle's truncation",
                 cosines(shorter, np.load(goldens / "shorter.npy")).min() >= MIN_COSINE)

    stock = embed(mlx_cpp, texts[:6], "--kernels", "stock")
    checks.check("stock kernels: cosine >= bound", cosines(stock, oracle[:6]).min() >= MIN_COSINE,
                 f"{cosines(stock, oracle[:6]).min():.8f}")

    oracle_tokens = json.loads((goldens / "tokens.json").read_text())
    for index in (0, 160, 175, 190):
        ids = subprocess.run([mlx_cpp, "tokenize", "-m", MODEL, "--text", texts[index],
                              "--add-special", "--ids-only"], capture_output=True, text=True,
                             check=True).stdout.split()
        checks.check(f"line {index + 1}: the oracle tokenizer's ids",
                     [int(i) for i in ids] == oracle_tokens[index])

    refused = subprocess.run([mlx_cpp, "generate", "-m", MODEL, "--prompt", "hi"],
                             capture_output=True, text=True)
    checks.check("generate refuses the encoder in one line",
                 refused.returncode == 1 and "embedding encoder" in refused.stderr and
                 len(refused.stderr.strip().splitlines()) == 1, refused.stderr.strip())
    for flags, expected in ((["--dimensions", "0", "--text", "x"], "dimensions must be"),
                            (["--prompt-name", "nope", "--text", "x"], "unknown prompt name"),
                            ([], "needs --text")):
        result = subprocess.run([mlx_cpp, "embed", "-m", MODEL, *flags], capture_output=True,
                                text=True)
        checks.check(f"embed {' '.join(flags) or '(no input)'}: a clear error",
                     result.returncode == 1 and expected in result.stderr, result.stderr.strip())
    if checks.failed:
        sys.exit("FAILED: " + ", ".join(checks.failed))
    print("all embedding checks passed")


if __name__ == "__main__":
    main()
