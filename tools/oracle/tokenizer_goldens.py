#!/usr/bin/env python3
"""Tokenizer goldens: trains small tokenizers of the shapes LLM checkpoints use
with the Python `tokenizers` library (byte-level BPE with the GPT-2, Llama-3
and Qwen2 pre-splits; SentencePiece-style BPE with byte fallback), saves each
as a model directory, and writes for every test string the ids and decodes
that `tokenizers` / transformers produce. Extra --model-dir directories with a
real tokenizer.json are tested the same way.

Output (DIR = --out):
  DIR/index.json                 [{"name", "dir", "cases"}]
  DIR/<name>/tokenizer.json      (+ tokenizer_config.json) for trained ones
  DIR/<name>.cases.json          {"cases": [{"text", "ids", "ids_special",
                                  "decoded", "decoded_keep"}], ...}
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tokenizer_corpus as corpus  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402
from tokenizer_trainers import TRAINERS  # noqa: E402

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def without_double_bos(ids, plain_ids):
    """The runtime's one deliberate difference from transformers: never a
    doubled BOS (when the text itself starts with the token the template puts
    first, it appears once)."""
    doubled = (len(plain_ids) > 0 and len(ids) > len(plain_ids) and ids[0] == plain_ids[0]
               and ids[1:1 + len(plain_ids)] == plain_ids)
    return (ids[1:], True) if doubled else (ids, False)


def make_cases(directory, strings):
    """Expected ids come from `tokenizers` on tokenizer.json. transformers
    (what mlx-lm loads) is asked too: the counts of strings where it differs
    go into the stats (model-specific transformers classes may rebuild the
    pipeline)."""
    from transformers import AutoTokenizer

    raw = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
    hf = AutoTokenizer.from_pretrained(directory)
    cases = []
    stats = {"double_bos_removed": 0, "transformers_differs": 0,
             "transformers_special_differs": 0}
    for text in strings:
        ids = raw.encode(text, add_special_tokens=False).ids
        ids_special, doubled = without_double_bos(raw.encode(text, add_special_tokens=True).ids, ids)
        hf_special, _ = without_double_bos(hf(text, add_special_tokens=True)["input_ids"], ids)
        stats["double_bos_removed"] += doubled
        stats["transformers_differs"] += hf(text, add_special_tokens=False)["input_ids"] != ids
        stats["transformers_special_differs"] += hf_special != ids_special
        cases.append({
            "text": text,
            "ids": ids,
            "ids_special": ids_special,
            "decoded": raw.decode(ids_special, skip_special_tokens=True),
            "decoded_keep": raw.decode(ids_special, skip_special_tokens=False),
        })
    return cases, stats


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--model-dir", action="append", default=[],
                        help="a directory with a real tokenizer.json (repeatable)")
    parser.add_argument("--strings", type=int, default=2000, help="test strings per tokenizer")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    entries = []
    for name, train in TRAINERS.items():
        directory = os.path.join(args.out, name)
        specials = train(directory)
        entries.append((name, directory, specials, True))
    for model_dir in args.model_dir:
        model_dir = os.path.abspath(os.path.expanduser(model_dir))
        if not os.path.exists(os.path.join(model_dir, "tokenizer.json")):
            sys.exit(f"--model-dir {model_dir} has no tokenizer.json")
        with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as stream:
            added = [t["content"] for t in json.load(stream).get("added_tokens", [])]
        entries.append((os.path.basename(model_dir.rstrip("/")), model_dir, added[:20], False))

    index = []
    for seed, (name, directory, specials, trained) in enumerate(entries):
        strings = corpus.test_strings(1000 + seed, args.strings, specials)
        cases, stats = make_cases(directory, strings)
        if trained and (stats["transformers_differs"] or stats["transformers_special_differs"]):
            sys.exit(f"{name}: transformers disagrees with tokenizers on our own tokenizer: {stats}")
        long_text = "\n".join(strings)
        long_ids = Tokenizer.from_file(os.path.join(directory, "tokenizer.json")).encode(
            long_text, add_special_tokens=False).ids
        cases_file = f"{name}.cases.json"
        with open(os.path.join(args.out, cases_file), "w", encoding="utf-8") as stream:
            json.dump({"name": name, "stats": stats, "long_text": long_text,
                       "long_ids": long_ids,
                       "cases": cases}, stream, ensure_ascii=False)
        index.append({"name": name, "dir": directory, "cases": cases_file})
        print(f"{name}: {len(cases)} strings, {stats}")
    with open(os.path.join(args.out, "index.json"), "w", encoding="utf-8") as stream:
        json.dump(index, stream, indent=1)


if __name__ == "__main__":
    main()
