#!/usr/bin/env python3
"""End-to-end check of `mlx-cpp template` against transformers' goldens.

Runs the binary on golden cases written by template_goldens.py (with
--template FILE, and with --model DIR laid out as tokenizer_config.json or
chat_template.jinja), compares its stdout byte for byte with transformers'
render, and checks that a template error exits non-zero naming the line.
Exits non-zero listing every mismatch.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

CASES = ("system_prompt", "prefill", "tool_call_and_result", "unicode")


def run_binary(binary, arguments):
    return subprocess.run([binary, "template", *arguments], capture_output=True, timeout=120)


def split_context(context):
    """The golden context as the CLI takes it: input file, flag, --kwargs."""
    context = dict(context)
    document = {"messages": context.pop("messages")}
    if "tools" in context:
        document["tools"] = context.pop("tools")
    add_generation_prompt = context.pop("add_generation_prompt")
    return document, add_generation_prompt, context


def check_case(binary, source_arguments, case, workdir, kwargs_filter=None):
    document, add_generation_prompt, kwargs = split_context(case["context"])
    if kwargs_filter:
        kwargs = kwargs_filter(kwargs)
    input_path = workdir / "input.json"
    input_path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    arguments = [*source_arguments, "--input", str(input_path)]
    if add_generation_prompt:
        arguments.append("--add-generation-prompt")
    if kwargs:
        arguments += ["--kwargs", json.dumps(kwargs, ensure_ascii=False)]
    result = run_binary(binary, arguments)
    if "error" in case:
        if result.returncode == 0:
            return f"transformers failed ({case['error']}) but the CLI rendered"
        return None
    if result.returncode != 0:
        return f"CLI failed: {result.stderr.decode(errors='replace').strip()}"
    if result.stdout != case["output"].encode("utf-8"):
        return "output differs from transformers"
    return None


def without_special_tokens(kwargs):
    return {key: value for key, value in kwargs.items() if key not in ("bos_token", "eos_token")}


def check_golden(binary, golden, workdir):
    failures = []
    template_file = golden["template_file"]
    source = pathlib.Path(template_file).read_text(encoding="utf-8")
    # The model directory carries the special tokens the goldens used.
    config_dir = workdir / "config_model"
    config_dir.mkdir(exist_ok=True)
    (config_dir / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": {"content": "<s>", "lstrip": False}, "eos_token": "</s>",
        "chat_template": [{"name": "tool_use", "template": "unused"},
                          {"name": "default", "template": source}]}), encoding="utf-8")
    jinja_dir = workdir / "jinja_model"
    jinja_dir.mkdir(exist_ok=True)
    (jinja_dir / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": "<s>", "eos_token": "</s>", "chat_template": "wrong: the .jinja file wins"}))
    (jinja_dir / "chat_template.jinja").write_text(source, encoding="utf-8")
    sources = [
        (["--template", template_file], None),
        (["--model", str(config_dir)], without_special_tokens),
        (["--model", str(jinja_dir)], without_special_tokens),
    ]
    for case in golden["cases"]:
        if case["name"] not in CASES:
            continue
        for arguments, kwargs_filter in sources:
            problem = check_case(binary, arguments, case, workdir, kwargs_filter)
            if problem:
                failures.append(f"{pathlib.Path(template_file).name} / {case['name']} / {arguments[0]}: {problem}")
    return failures


def check_error_reporting(binary, workdir):
    template = workdir / "broken.jinja"
    template.write_text("line one\n{% if messages %}\n{{ raise_exception('no system role') }}\n{% endif %}")
    document = workdir / "error_input.json"
    document.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    result = run_binary(binary, ["--template", str(template), "--input", str(document)])
    stderr = result.stderr.decode(errors="replace")
    if result.returncode == 0 or "template error at line 3: no system role" not in stderr:
        return [f"raise_exception: expected a non-zero exit naming line 3, got {result.returncode}: {stderr!r}"]
    return []


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--goldens", required=True, help="directory written by template_goldens.py")
    args = parser.parse_args()
    goldens = pathlib.Path(args.goldens)
    index = json.loads((goldens / "index.json").read_text())
    failures = []
    checked = 0
    with tempfile.TemporaryDirectory() as temporary:
        workdir = pathlib.Path(temporary)
        for name in index:
            golden = json.loads((goldens / name).read_text(encoding="utf-8"))
            failures += check_golden(args.binary, golden, workdir)
            checked += 1
        failures += check_error_reporting(args.binary, workdir)
    for failure in failures:
        print("FAIL", failure)
    print(f"{checked} templates checked through the CLI, {len(failures)} failures")
    sys.exit(1 if failures or checked == 0 else 0)


if __name__ == "__main__":
    main()
