#!/usr/bin/env python3
"""Goldens for continuous batching, produced by mlx-lm's own BatchGenerator.

For every architecture of model_goldens x {bf16, q4} this builds the same tiny
random checkpoint as model_goldens (same builder, same seed), saves it as an
MLX directory, reloads it through mlx_lm.utils.load_model and runs one
"staggered" scenario through mlx_lm.generate.BatchGenerator, greedy:
  * five prompts inserted at once, of lengths on both sides of gemma3_text's
    16-token window, with different max_tokens so rows leave mid-flight;
  * a small prefill batch, completion batch and prefill chunk, so prompts are
    prefilled in right-padded chunks over several steps and some wait;
  * a sixth prompt inserted after a few calls to next(), joining mid-flight.
It records, per uid, the generated tokens and the logprobs row of every one
(GenerationBatch.Response.logprobs), and a trace of every call to next(): each
model call it made (prefill chunk, the first step of the rows that just left
the prompt batch, or a decode step of the generation batch), with the rows'
uids in batch order, the input ids as given to the model (right-padded with
0), the bookkeeping of the batched caches (one layer per cache class) before
and after the call and, for a prefill chunk, after finalize(), every
attention mask the model asked its caches for and the last-position logits
of each generation step; then the responses and the uids of the prompt and
generation batches after the call. For information it also records
the plain single-sequence greedy run of generate_step for each prompt and
prints whether the batched tokens equal it.
Everything lands in --out: <case>/model/, <case>/logits.safetensors and
<case>/goldens.json, plus manifest.json listing the cases. Goldens are
machine-specific: they are generated where they are checked, never committed.
"""
import argparse
import contextlib
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mlx.core as mx  # noqa: E402
from mlx_lm.generate import (  # noqa: E402
    BatchGenerator,
    GenerationBatch,
    PromptProcessingBatch,
    generate_step,
)
from mlx_lm.models.cache import ArraysCache, BatchKVCache, BatchRotatingKVCache  # noqa: E402
from mlx_lm.utils import load_model  # noqa: E402

from model_goldens import (  # noqa: E402
    ARCHITECTURES,
    VOCAB,
    build_checkpoint,
    case_quantizations,
    checkpoint_seed,
)

CASE_QUANTIZATIONS = ("bf16", "q4")
# Architectures mlx-lm's BatchGenerator cannot run, so there is nothing to
# hold the batched path to: gemma2's module adds a batch mask [B, 1, L, S] to
# its grouped [B, kv_heads, repeats, L, S] scores, which do not broadcast.
# Their batched rows are held to the same request run alone instead
# (tests/engine/scheduler_test.cpp).
NOT_BATCHABLE_BY_MLX_LM = {"gemma2"}

SCENARIO = dict(
    name="staggered",
    completion_batch_size=4,
    prefill_batch_size=2,
    prefill_step_size=16,
    # Inserted together before the first call to next(), uids 0..4.
    prompt_lengths=[5, 23, 9, 41, 17],
    max_tokens=[6, 12, 9, 4, 10],
    # Inserted after this many calls to next(), uid 5.
    late_prompt_length=12,
    late_max_tokens=7,
    late_after_calls=3,
)
MAX_CALLS = 200




def cache_state(cache):
    if isinstance(cache, ArraysCache):  # a recurrent state (lfm2, qwen3_5)
        return dict(type=type(cache).__name__,
                    left_padding=None if cache.left_padding is None else cache.left_padding.tolist(),
                    lengths=None if cache.lengths is None else cache.lengths.tolist())
    state = dict(type=type(cache).__name__,
                 offset=cache.offset.tolist(),
                 left_padding=cache.left_padding.tolist(),
                 idx=int(cache._idx),
                 storage=None if cache.keys is None else int(cache.keys.shape[2]))
    if isinstance(cache, BatchRotatingKVCache):
        state.update(max_size=int(cache.max_size), offset_max=int(cache._offset),
                     rotated=bool(cache.rotated))
    return state


class Tracer:
    """Observes BatchGenerator without changing what it computes: the model
    is wrapped in a proxy that logs each call, and the batches' step and
    prompt methods and the batched caches' make_mask are wrapped to say which
    rows a call is for and which masks it used."""

    def __init__(self, model):
        self.model = model
        self.stage = None
        self.calls = []  # model calls of the current next()
        self.masks = []  # (layer, window_size, mask) of the current model call
        self.arrays = {}
        self.counter = 0
        self._cache = None

    # The proxy BatchGenerator is given in place of the model.
    def proxy(self):
        tracer = self

        class Proxy:
            def __getattr__(self, name):
                return getattr(tracer.model, name)

            def __call__(self, inputs, cache=None, **kwargs):
                return tracer.model_call(inputs, cache, **kwargs)

        return Proxy()

    def model_call(self, inputs, cache, **kwargs):
        stage, uids, lengths = self.stage
        seen, representatives = set(), []
        for layer, c in enumerate(cache):
            if type(c) not in seen:
                seen.add(type(c))
                representatives.append(dict(layer=layer, **cache_state(c)))
        self._cache, self.masks = cache, []
        out = self.model(inputs, cache=cache, **kwargs)
        self._cache = None
        entry = dict(call=self.counter, stage=stage, uids=list(uids), inputs=inputs.tolist(),
                     caches=representatives,
                     caches_after=[dict(layer=r["layer"], **cache_state(cache[r["layer"]]))
                                   for r in representatives],
                     masks=[])
        if stage != "prefill":
            # The logits the step samples from (the prefill's are discarded).
            self.arrays[f"call{self.counter}.logits"] = out[:, -1, :]
        if lengths is not None:
            entry["lengths"] = list(lengths)
        for layer, window_size, mask in self.masks:
            key = f"call{self.counter}.mask.layer{layer}"
            entry["masks"].append(dict(layer=layer, window_size=window_size,
                                       kind="array" if isinstance(mask, mx.array) else repr(mask),
                                       shape=list(mask.shape) if isinstance(mask, mx.array) else None,
                                       key=key if isinstance(mask, mx.array) else None))
            if isinstance(mask, mx.array):
                self.arrays[key] = mask.astype(mx.uint8)
        self.counter += 1
        self.calls.append(entry)
        return out

    @contextlib.contextmanager
    def installed(self):
        tracer = self
        step, prompt = GenerationBatch._step, PromptProcessingBatch.prompt
        masks = {cls: cls.make_mask for cls in (BatchKVCache, BatchRotatingKVCache)}

        def traced_step(batch):
            # A batch that has not stepped yet is running its first step.
            first = batch._current_tokens is None
            tracer.stage = ("first_step" if first else "decode", list(batch.uids), None)
            return step(batch)

        def traced_prompt(batch, tokens):
            tracer.stage = ("prefill", list(batch.uids), [len(t) for t in tokens])
            calls = len(tracer.calls)
            result = prompt(batch, tokens)
            if len(tracer.calls) > calls:
                # After finalize() has moved right-padded rows to the right.
                tracer.calls[-1]["caches_after_prompt"] = [
                    dict(layer=r["layer"], **cache_state(batch.prompt_cache[r["layer"]]))
                    for r in tracer.calls[-1]["caches"]]
            return result

        def traced_mask(original):
            def make_mask(cache, N, *args, **kwargs):
                mask = original(cache, N, *args, **kwargs)
                if tracer._cache is not None:
                    layer = next(i for i, c in enumerate(tracer._cache) if c is cache)
                    tracer.masks.append((layer, kwargs.get("window_size"), mask))
                return mask
            return make_mask

        GenerationBatch._step = traced_step
        PromptProcessingBatch.prompt = traced_prompt
        for cls, original in masks.items():
            cls.make_mask = traced_mask(original)
        try:
            yield
        finally:
            GenerationBatch._step = step
            PromptProcessingBatch.prompt = prompt
            for cls, original in masks.items():
                cls.make_mask = original


def run_batched(model, prompts, max_tokens, late_prompt, late_max_tokens):
    tracer = Tracer(model)
    results = {}
    trace = []
    with tracer.installed():
        generator = BatchGenerator(tracer.proxy(),
                                   completion_batch_size=SCENARIO["completion_batch_size"],
                                   prefill_batch_size=SCENARIO["prefill_batch_size"],
                                   prefill_step_size=SCENARIO["prefill_step_size"])
        uids = generator.insert(prompts, max_tokens=max_tokens)
        expected = len(prompts) + 1
        for uid in uids:
            results[uid] = dict(tokens=[], logprobs=[], finish_reason=None)
        for index in range(MAX_CALLS):
            inserted = []
            if index == SCENARIO["late_after_calls"]:
                inserted = generator.insert([late_prompt], max_tokens=[late_max_tokens])
                for uid in inserted:
                    results[uid] = dict(tokens=[], logprobs=[], finish_reason=None)
            tracer.calls = []
            prompt_responses, generation_responses = generator.next()
            for r in generation_responses:
                results[r.uid]["tokens"].append(r.token)
                results[r.uid]["logprobs"].append(r.logprobs)
                if r.finish_reason is not None:
                    results[r.uid]["finish_reason"] = r.finish_reason
            trace.append(dict(
                index=index,
                inserted_before=list(inserted),
                model_calls=tracer.calls,
                prompt_responses=[dict(uid=r.uid, progress=list(r.progress),
                                       end_of_segment=r.end_of_segment,
                                       end_of_prompt=r.end_of_prompt)
                                  for r in prompt_responses],
                generation_responses=[dict(uid=r.uid, token=r.token,
                                           finish_reason=r.finish_reason)
                                      for r in generation_responses],
                prompt_batch_uids=list(generator._prompt_batch.uids),
                generation_batch_uids=list(generator._generation_batch.uids),
                waiting_uids=[s[0] for s in generator._unprocessed_sequences]))
            done = [u for u, r in results.items() if r["finish_reason"] is not None]
            if len(done) == expected:
                break
        else:
            raise RuntimeError("the scenario did not finish")
        generator.close()
    return results, trace, tracer.arrays


def run_single(model, prompt, max_tokens):
    tokens, logprobs = [], []
    for token, row in generate_step(mx.array(prompt), model, max_tokens=max_tokens):
        tokens.append(int(token))
        logprobs.append(row)
    return tokens, logprobs


def make_case(out, arch, quant_name, quant, dtype, config, seed):
    name = f"{arch}_{quant_name}"
    case_dir = out / name
    shutil.rmtree(case_dir, ignore_errors=True)
    case_dir.mkdir(parents=True)
    model_dir = build_checkpoint(case_dir, arch, config, quant, seed, dtype)
    model, _ = load_model(model_dir)

    key = mx.random.key(seed + 2000)
    lengths = SCENARIO["prompt_lengths"] + [SCENARIO["late_prompt_length"]]
    prompts = []
    for length in lengths:
        key, subkey = mx.random.split(key)
        prompts.append(mx.random.randint(0, VOCAB, (length,), key=subkey).tolist())
    max_tokens = SCENARIO["max_tokens"] + [SCENARIO["late_max_tokens"]]

    results, trace, arrays = run_batched(model, prompts[:-1], max_tokens[:-1], prompts[-1],
                                         max_tokens[-1])
    goldens = {"name": name, "architecture": arch, "scenario": SCENARIO, "rows": {},
               "trace": trace}
    report = []
    for uid, prompt in enumerate(prompts):
        row = results[uid]
        single_tokens, single_logprobs = run_single(model, prompt, max_tokens[uid])
        arrays[f"uid{uid}.logprobs"] = mx.stack(row["logprobs"])
        arrays[f"uid{uid}.single_logprobs"] = mx.stack(single_logprobs)
        same = row["tokens"] == single_tokens
        goldens["rows"][str(uid)] = dict(
            uid=uid, ids=prompt, max_tokens=max_tokens[uid], tokens=row["tokens"],
            finish_reason=row["finish_reason"], single_tokens=single_tokens,
            equals_single=same)
        if same:
            diff = mx.max(mx.abs(arrays[f"uid{uid}.logprobs"].astype(mx.float32)
                                 - arrays[f"uid{uid}.single_logprobs"].astype(mx.float32)))
            report.append(f"{uid}:same(max|dlogprob|={diff.item():.3g})")
        else:
            report.append(f"{uid}:differs")
    mx.eval(arrays)
    mx.save_safetensors(str(case_dir / "logits.safetensors"), arrays)
    (case_dir / "goldens.json").write_text(json.dumps(goldens))
    return name, " ".join(report)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--only", help="comma-separated case names")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    cases = []
    for index, (arch, config) in enumerate(ARCHITECTURES.items()):
        if arch in NOT_BATCHABLE_BY_MLX_LM:
            continue
        for quant_name, quant, dtype in case_quantizations(arch, CASE_QUANTIZATIONS):
            if only and f"{arch}_{quant_name}" not in only:
                continue
            name, report = make_case(args.out, arch, quant_name, quant, dtype, config,
                                     checkpoint_seed(index))
            cases.append(name)
            print("wrote", name, "batched vs generate_step:", report, flush=True)
    (args.out / "manifest.json").write_text(json.dumps({"cases": cases, "scenario": SCENARIO}))


if __name__ == "__main__":
    main()
