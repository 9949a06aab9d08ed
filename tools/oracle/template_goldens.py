#!/usr/bin/env python3
"""Chat-template goldens: real templates rendered by transformers itself.

For every template (the shared test templates, plus any --template-file or
--template-dir given), renders a fixed set of conversations with
transformers' own chat-template code (the same message normalization as
apply_chat_template, then render_jinja_template with the template string; no
model download) and writes, per template, DIR/<name>.json:

  {"template_file": path, "cases": [{"name", "context", "output" | "error"}]}

`context` is exactly what the C++ side passes to ChatTemplate::render:
messages, tools, add_generation_prompt and the extra keyword arguments.
Adding a real model's template is one argument: --template-file PATH.
"""
import argparse
import json
import pathlib
import random
import sys

from transformers.utils.chat_template_utils import _normalize_chat_messages, render_jinja_template

SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}

SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web and return the top results.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "max_results": {"type": "integer", "minimum": 1, "default": 5},
                "filters": {
                    "type": "object",
                    "properties": {"site": {"type": "string"}, "recent": {"type": "boolean"}},
                },
            },
            "required": ["query"],
        },
    },
}


def tool_call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def conversation_cases():
    system = {"role": "system", "content": "You are a helpful assistant."}
    user = {"role": "user", "content": "What is the capital of France?"}
    answer = {"role": "assistant", "content": "The capital of France is Paris."}
    follow_up = {"role": "user", "content": "And of Germany?"}
    weather_call = tool_call("call_1", "get_weather", {"city": "Paris", "unit": "celsius"})
    tool_result = {"role": "tool", "tool_call_id": "call_1", "name": "get_weather",
                   "content": "{\"temperature\": 21, \"sky\": \"clear\"}"}
    ask_weather = {"role": "user", "content": "What's the weather in Paris?"}
    return [
        ("single_turn", [user], {}),
        ("system_prompt", [system, user], {}),
        ("multi_turn", [system, user, answer, follow_up], {}),
        ("prefill", [user, {"role": "assistant", "content": "The capital"}],
         {"add_generation_prompt": False}),
        ("no_generation_prompt", [system, user, answer], {"add_generation_prompt": False}),
        ("tool_definitions", [system, ask_weather], {"tools": [WEATHER_TOOL, SEARCH_TOOL]}),
        ("tool_definitions_no_system", [ask_weather], {"tools": [WEATHER_TOOL]}),
        ("tool_call_and_result",
         [ask_weather, {"role": "assistant", "content": "", "tool_calls": [weather_call]}, tool_result],
         {"tools": [WEATHER_TOOL]}),
        ("tool_call_null_content",
         [system, ask_weather, {"role": "assistant", "content": None, "tool_calls": [weather_call]},
          tool_result, {"role": "assistant", "content": "It is 21 degrees and clear."},
          {"role": "user", "content": "Thanks!"}],
         {"tools": [WEATHER_TOOL, SEARCH_TOOL]}),
        ("tool_call_string_arguments",
         [ask_weather, {"role": "assistant", "content": "Let me check.", "tool_calls": [
             tool_call("call_2", "get_weather", "{\"city\": \"Paris\"}")]},
          {"role": "tool", "tool_call_id": "call_2", "content": "sunny"}],
         {"tools": [WEATHER_TOOL]}),
        ("parallel_tool_calls",
         [ask_weather, {"role": "assistant", "content": "", "tool_calls": [
             weather_call, tool_call("call_3", "search", {"query": "Paris events", "max_results": 3})]},
          tool_result, {"role": "tool", "tool_call_id": "call_3", "name": "search",
                        "content": "Jazz festival"}],
         {"tools": [WEATHER_TOOL, SEARCH_TOOL]}),
        ("thinking_on", [system, user], {"enable_thinking": True}),
        ("thinking_off", [system, user], {"enable_thinking": False}),
        ("reasoning_history",
         [user, {"role": "assistant", "content": "Paris.", "reasoning_content": "The user asks about France."},
          follow_up],
         {"enable_thinking": True}),
        ("reasoning_effort_high", [user], {"reasoning_effort": "high"}),
        ("reasoning_effort_low", [system, user], {"reasoning_effort": "low"}),
        ("content_parts",
         [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
          {"role": "user", "content": [{"type": "text", "text": "Describe this."},
                                       {"type": "text", "text": "Then summarize."}]}],
         {}),
        ("unicode",
         [system, {"role": "user", "content": "Héllo wörld! 你好 😀 \"quotes\" 'single' back\\slash\n"
                                              "tab\there {{ not a tag }} {% nor this %}"}],
         {}),
        ("whitespace_content",
         [{"role": "user", "content": "  padded question  \n\n"},
          {"role": "assistant", "content": "\n\nanswer with blank lines\n\n"},
          {"role": "user", "content": "next"}],
         {}),
    ]


RANDOM_TEXTS = ["Hi", "", " spaced ", "line one\nline two", "Ünïcødé ✓ 😀", "tab\tand \"quote\"",
                "{{ braces }}", "<think>inner</think>", "a'b", "1.5"]
RANDOM_ARGUMENTS = [{}, {"city": "Oslo"}, {"n": 3, "ratio": 0.25, "ok": True, "none": None},
                    {"nested": {"list": [1, "two", {"three": 3.0}]}}, "{\"city\": \"Rome\"}"]


def random_message(rng, role, call_number):
    message = {"role": role, "content": rng.choice(RANDOM_TEXTS)}
    if role == "user" and rng.random() < 0.2:
        message["content"] = [{"type": "text", "text": rng.choice(RANDOM_TEXTS)}]
    if role == "assistant":
        if rng.random() < 0.3:
            message["reasoning_content"] = rng.choice(RANDOM_TEXTS)
        if rng.random() < 0.4:
            message["content"] = rng.choice(["", None, "Calling."])
            message["tool_calls"] = [
                tool_call(f"call{call_number}x{i}", rng.choice(["get_weather", "search"]),
                          rng.choice(RANDOM_ARGUMENTS)) for i in range(rng.randint(1, 2))]
    return message


def random_conversation(rng):
    """A plausible conversation: optional system, alternating turns, tool
    results after tool calls, random kwargs."""
    messages = []
    if rng.random() < 0.5:
        messages.append({"role": "system", "content": rng.choice(RANDOM_TEXTS[1:])})
    for turn in range(rng.randint(1, 3)):
        messages.append(random_message(rng, "user", turn))
        if turn < 2 or rng.random() < 0.5:
            assistant = random_message(rng, "assistant", turn)
            messages.append(assistant)
            for call in assistant.get("tool_calls", []):
                messages.append({"role": "tool", "tool_call_id": call["id"],
                                 "content": rng.choice(RANDOM_TEXTS)})
    options = {"add_generation_prompt": messages[-1]["role"] != "assistant" or rng.random() < 0.3}
    if rng.random() < 0.5:
        options["tools"] = rng.sample([WEATHER_TOOL, SEARCH_TOOL], rng.randint(1, 2))
    if rng.random() < 0.4:
        options["enable_thinking"] = rng.random() < 0.5
    return messages, options


def random_cases(count, seed):
    rng = random.Random(seed)
    return [(f"random_{index}", *random_conversation(rng)) for index in range(count)]


def render_case(template, messages, options):
    context = {"messages": messages, "add_generation_prompt": True, **SPECIAL_TOKENS, **options}
    kwargs = dict(context)
    chat = _normalize_chat_messages(kwargs.pop("messages"))
    tools = kwargs.pop("tools", None)
    add_generation_prompt = kwargs.pop("add_generation_prompt")
    record = {"context": context}
    try:
        rendered, _ = render_jinja_template(
            conversations=[chat], tools=tools, chat_template=template,
            add_generation_prompt=add_generation_prompt, **kwargs)
        record["output"] = rendered[0]
    except Exception as error:  # the template itself rejected the input
        record["error"] = f"{type(error).__name__}: {error}"
    return record


def template_paths(args):
    paths = sorted(pathlib.Path(args.templates_dir).glob("*.jinja")) if args.templates_dir else []
    for directory in args.template_dir:
        paths += sorted(pathlib.Path(directory).glob("*.jinja"))
    paths += [pathlib.Path(path) for path in args.template_file]
    for directory in args.model_dir:
        path = model_template_file(pathlib.Path(directory), pathlib.Path(args.out))
        if path is None:
            print(f"{directory}: no chat template (a base model), nothing to compare")
        else:
            paths.append(path)
    return paths


def model_template_file(directory, out):
    """A model directory's own chat template (chat_template.jinja wins over
    tokenizer_config.json, as in transformers), copied to a .jinja file;
    None when the model has none."""
    jinja = directory / "chat_template.jinja"
    if jinja.exists():
        template = jinja.read_text(encoding="utf-8")
    else:
        config = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))
        template = config.get("chat_template")
        if not template:
            return None
        if isinstance(template, list):
            template = next(t["template"] for t in template if t.get("name") == "default")
    target = out / "model_templates" / f"model-{directory.name}.jinja"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(template, encoding="utf-8")
    return target


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--templates-dir", help="directory of *.jinja test templates")
    parser.add_argument("--template-dir", action="append", default=[], help="more *.jinja")
    parser.add_argument("--template-file", action="append", default=[], help="one more template")
    parser.add_argument("--model-dir", action="append", default=[],
                        help="a model directory whose own chat template is tested too")
    parser.add_argument("--random-cases", type=int, default=24,
                        help="randomized conversations per template (fixed seed)")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    paths = template_paths(args)
    if not paths:
        sys.exit("template_goldens: no templates found")
    index = []
    for path in paths:
        template = path.read_text(encoding="utf-8")
        cases = []
        for name, messages, options in conversation_cases() + random_cases(args.random_cases, args.seed):
            cases.append({"name": name, **render_case(template, messages, options)})
        golden = {"template_file": str(path.resolve()), "cases": cases}
        golden_name = path.stem + ".json"
        (out / golden_name).write_text(json.dumps(golden, ensure_ascii=False, indent=1), encoding="utf-8")
        index.append(golden_name)
        errors = sum("error" in case for case in cases)
        print(f"{path.name}: {len(cases)} cases, {errors} rejected by the template")
    (out / "index.json").write_text(json.dumps(index, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
