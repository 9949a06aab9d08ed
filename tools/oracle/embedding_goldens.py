#!/usr/bin/env python3
"""Goldens for the embedding tests, produced by sentence-transformers itself.

Loads the embedding model directory (a sentence-transformers checkpoint, as
`mlx-cpp pull` unpacks it) with SentenceTransformer on the CPU in float32,
and writes to --out:
  texts.npy      the embeddings of every line of --texts (no prompt), one row
                 per line, as `model.encode` gives them (normalized)
  queries.npy    the retrieval set's queries with the "query" prompt
  documents.npy  its documents with the "document" prompt
  shorter.npy    the first lines again, truncated to 256 dimensions
                 (truncate_dim) and normalized
  tokens.json    each line's token ids (the tokenizer with its special tokens)
Runs in the venv tools/oracle/embedding_goldens.sh makes (deps/
embedding-oracle.txt): generated where they are checked, never committed.
"""
import argparse
import json
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import SentenceTransformer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--texts", required=True)
    parser.add_argument("--retrieval", required=True)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = SentenceTransformer(args.model, device="cpu")
    model.eval()
    lines = [line for line in Path(args.texts).read_text(encoding="utf-8").splitlines() if line]
    retrieval = json.loads(Path(args.retrieval).read_text(encoding="utf-8"))

    def encode(texts, **kwargs):
        # One text per batch: no padding, each sequence as it is.
        return np.asarray(model.encode(texts, batch_size=1, convert_to_numpy=True, **kwargs),
                          dtype=np.float32)

    np.save(args.out / "texts.npy", encode(lines))
    np.save(args.out / "queries.npy", encode(retrieval["queries"], prompt_name="query"))
    np.save(args.out / "documents.npy", encode(retrieval["documents"], prompt_name="document"))
    shorter = encode(lines[:20], truncate_dim=256)
    np.save(args.out / "shorter.npy", shorter / np.linalg.norm(shorter, axis=1, keepdims=True))
    tokens = [model.tokenizer(line)["input_ids"] for line in lines]
    (args.out / "tokens.json").write_text(json.dumps(tokens))
    print(f"embedded {len(lines)} texts, {len(retrieval['queries'])} queries, "
          f"{len(retrieval['documents'])} documents into {args.out}")


if __name__ == "__main__":
    main()
