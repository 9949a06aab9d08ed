#!/usr/bin/env python3
"""Goldens for speculative decoding, produced by mlx-lm's own
speculative_generate_step.

For every architecture x {bf16, q4} of model_goldens (read from --models, the
model_goldens fixture's output) the target is that case's checkpoint and the
draft the same architecture at another width (q4 -> q8, otherwise q4), both
reloaded through mlx_lm.utils.load_model. Each prompt runs greedily with
num_draft_tokens 2 and 3; every yielded token, its logprobs row and whether
the draft proposed it are recorded. Prompts: the case's "short" and "window"
prompts and one that repeats itself. gemma3_text runs only the short prompt
with few tokens: past its 16-token window its rotating caches cannot be
trimmed, and speculative_generate_step's rewind then silently keeps the
rejected drafts (it checks trimmability once, at the start).

Writes --out/<case>/goldens.json and logits.safetensors, plus manifest.json.
Goldens are machine-specific: generated where they are checked, never
committed.
"""
import argparse
import json
import shutil
from pathlib import Path

import mlx.core as mx
from mlx_lm.generate import speculative_generate_step
from mlx_lm.utils import load_model

ARCHITECTURES = ("llama", "llama_untied", "qwen2", "qwen3", "gemma3_text")
QUANTIZATIONS = ("bf16", "q4")
DRAFT_TOKENS = (2, 3)
MAX_TOKENS = 24
WINDOWED_MAX_TOKENS = 4
REPEATING_PROMPT = [5, 6, 7, 8, 9, 10, 5, 6, 7, 8, 9, 10, 5, 6, 7]
# The scheduler's stock prefill chunk (engine/token_generator.h).
PREFILL_STEP = 2048


def draft_name(arch, quant):
    return f"{arch}_{'q8' if quant == 'q4' else 'q4'}"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--models", required=True, type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    cases = []
    for arch in ARCHITECTURES:
        for quant in QUANTIZATIONS:
            name = f"{arch}_{quant}"
            target, _ = load_model(args.models / name / "model")
            draft, _ = load_model(args.models / draft_name(arch, quant) / "model")
            source = json.loads((args.models / name / "goldens.json").read_text())
            prompts = {key: value["ids"] for key, value in source["prompts"].items()}
            prompts["repeating"] = REPEATING_PROMPT
            windowed = arch == "gemma3_text"
            if windowed:
                prompts = {"short": prompts["short"]}
            max_tokens = WINDOWED_MAX_TOKENS if windowed else MAX_TOKENS
            runs, arrays = [], {}
            for prompt_name, ids in prompts.items():
                for k in DRAFT_TOKENS:
                    tokens, from_draft, rows = [], [], []
                    for token, logprobs, drafted in speculative_generate_step(
                            mx.array(ids), target, draft, num_draft_tokens=k,
                            max_tokens=max_tokens, prefill_step_size=PREFILL_STEP):
                        tokens.append(int(token))
                        from_draft.append(bool(drafted))
                        rows.append(logprobs.astype(mx.float32))
                    key = f"{prompt_name}.k{k}"
                    arrays[key] = mx.stack(rows)
                    runs.append(dict(key=key, ids=ids, draft_tokens=k, max_tokens=max_tokens,
                                     tokens=tokens, from_draft=from_draft))
            case_dir = args.out / name
            shutil.rmtree(case_dir, ignore_errors=True)
            case_dir.mkdir(parents=True)
            mx.eval(arrays)
            mx.save_safetensors(str(case_dir / "logits.safetensors"), arrays)
            (case_dir / "goldens.json").write_text(json.dumps(
                dict(name=name, draft=draft_name(arch, quant), runs=runs)))
            cases.append(name)
            print("wrote", name, flush=True)
    (args.out / "manifest.json").write_text(json.dumps({"cases": cases}))


if __name__ == "__main__":
    main()
