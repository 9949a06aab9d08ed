#!/usr/bin/env python3
"""POST /v1/embeddings end to end: `mlx-cpp serve` on EmbeddingGemma, the
official openai client, the sentence-transformers goldens of
tools/oracle/embedding_goldens.py.

Checks: a list of texts (the client asks for base64 and decodes it) and a
single string (float JSON) match the oracle (cosine >= 0.9999); dimensions;
the "query" prompt_name (extra_body) matches the oracle's queries; token-id
inputs equal the same text's; usage counts the tokens; bad bodies and
generation requests are 400s that say why; the server still serves after.
usage: embeddings_e2e.py MLX_CPP GOLDENS_DIR TEXTS RETRIEVAL
"""
import json
import sys
from pathlib import Path

import numpy as np
import openai

from server_process import Checks, Server, model_directory

MODEL = "embeddinggemma-300m"
MIN_COSINE = 0.9999


def cosines(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def main():
    mlx_cpp, goldens = sys.argv[1], Path(sys.argv[2])
    texts = [line for line in Path(sys.argv[3]).read_text(encoding="utf-8").splitlines() if line]
    retrieval = json.loads(Path(sys.argv[4]).read_text(encoding="utf-8"))
    oracle = np.load(goldens / "texts.npy")
    checks = Checks()
    with Server(mlx_cpp, model_directory(mlx_cpp, MODEL)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        answer = client.embeddings.create(model=MODEL, input=texts[:8])
        vectors = [item.embedding for item in answer.data]
        checks.check("a list of texts: one embedding each, in order",
                     [item.index for item in answer.data] == list(range(8)))
        checks.check("a list of texts (base64): the oracle's embeddings",
                     cosines(vectors, oracle[:8]).min() >= MIN_COSINE,
                     f"{cosines(vectors, oracle[:8]).min():.8f}")
        tokens = json.loads((goldens / "tokens.json").read_text())
        checks.check("usage counts the tokens",
                     answer.usage.prompt_tokens == sum(len(t) for t in tokens[:8]) and
                     answer.usage.total_tokens == answer.usage.prompt_tokens,
                     str(answer.usage))
        single = client.embeddings.create(model=MODEL, input=texts[3], encoding_format="float")
        checks.check("one string (float JSON): the oracle's embedding",
                     cosines(single.data[0].embedding, oracle[3]) >= MIN_COSINE)
        short = client.embeddings.create(model=MODEL, input=texts[:4], dimensions=256)
        short_vectors = np.array([item.embedding for item in short.data])
        checks.check("dimensions 256: the oracle's truncation, unit length",
                     short_vectors.shape == (4, 256) and
                     cosines(short_vectors, np.load(goldens / "shorter.npy")[:4]).min()
                     >= MIN_COSINE and
                     np.abs(np.linalg.norm(short_vectors, axis=1) - 1).max() < 1e-5)
        queries = client.embeddings.create(model=MODEL, input=retrieval["queries"][:3],
                                           extra_body={"prompt_name": "query"})
        checks.check("prompt_name query: the oracle's queries",
                     cosines([item.embedding for item in queries.data],
                             np.load(goldens / "queries.npy")[:3]).min() >= MIN_COSINE)
        by_ids = client.embeddings.create(model=MODEL, input=[tokens[5]], encoding_format="float")
        checks.check("token ids: the embedding of the same text",
                     cosines(by_ids.data[0].embedding, oracle[5]) >= MIN_COSINE)

        def refused(body, param, path="/v1/embeddings"):
            code, text = server.request("POST", path, body)
            error = json.loads(text).get("error", {}) if text.startswith("{") else {}
            return code == 400 and (param is None or error.get("param") == param), text[:200]

        for name, body, param in (
                ("no input", {"model": MODEL}, "input"),
                ("an empty list", {"input": []}, "input"),
                ("an empty string", {"input": [""]}, "input"),
                ("a number", {"input": 3}, "input"),
                ("mixed items", {"input": ["a", 3]}, "input"),
                ("negative token id", {"input": [[2, -1]]}, "input"),
                ("token id past the vocabulary", {"input": [[2, 10**7]]}, "input"),
                ("dimensions 0", {"input": "a", "dimensions": 0}, "dimensions"),
                ("dimensions past the model's", {"input": "a", "dimensions": 769}, "dimensions"),
                ("encoding_format", {"input": "a", "encoding_format": "int8"}, "encoding_format"),
                ("unknown prompt_name", {"input": "a", "prompt_name": "nope"}, "prompt_name"),
                ("too many inputs", {"input": ["a"] * 2049}, "input"),
                ("longer than the model reads", {"input": "word " * 3000}, "input")):
            ok, text = refused(body, param)
            checks.check(f"400 for {name}", ok, text)
        ok, text = refused({"messages": [{"role": "user", "content": "hi"}]}, None,
                           "/v1/chat/completions")
        checks.check("chat completions: 400, an embedding model",
                     ok and "embedding model" in text, text)
        again = client.embeddings.create(model=MODEL, input="still here")
        checks.check("still serving after the bad requests", len(again.data[0].embedding) == 768)
    checks.finish()


if __name__ == "__main__":
    main()
