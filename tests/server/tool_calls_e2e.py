"""End-to-end tool calling on Qwen2.5-Coder-1.5B-Instruct (a template with
tool calls) with the official openai client: a whole round trip (call ->
tool result -> final answer), streamed tool-call deltas reassembled equal to
the whole response, tool_choice none, the format named in /v1/models, and
400s for bad tool input, after which the server still answers.

usage: tool_calls_e2e.py MLX_CPP_BINARY"""
import json
import sys

import openai

from server_process import Checks, Server, model_directory

MODEL = "qwen2.5-coder-1.5b-instruct"
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
QUESTION = [{"role": "user", "content": "What is the weather in Paris right now?"}]
# Without it the 1.5B model calls the tool again after its result.
SYSTEM = {"role": "system", "content": "You are a helpful assistant. When a tool result answers "
          "the question, reply to the user in plain words."}
GREEDY = {"temperature": 0, "max_tokens": 120}


def reassemble(stream):
    """(content, [{id, name, arguments}], finish_reason, markup_leaked) of a stream."""
    content, calls, finish, leaked = "", [], None, False
    for chunk in stream:
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            delta = choice.delta
            if delta.content:
                content += delta.content
                leaked = leaked or "<tool_call>" in delta.content or "```" in delta.content
            for call in delta.tool_calls or []:
                if call.index == len(calls):
                    calls.append({"id": call.id, "name": call.function.name, "arguments": ""})
                calls[call.index]["arguments"] += call.function.arguments or ""
    return content, calls, finish, leaked


def check_round_trip(checks, client):
    first = client.chat.completions.create(model=MODEL, messages=QUESTION, tools=[WEATHER],
                                           **GREEDY)
    message = first.choices[0].message
    calls = message.tool_calls or []
    checks.check("a call comes back as tool_calls", len(calls) == 1, repr(message))
    checks.check("finish_reason is tool_calls", first.choices[0].finish_reason == "tool_calls",
                 first.choices[0].finish_reason)
    if not calls:
        return None
    call = calls[0]
    arguments = json.loads(call.function.arguments)
    checks.check("the call names the tool with valid JSON arguments",
                 call.function.name == "get_weather" and arguments.get("city") == "Paris",
                 repr(call))
    checks.check("no markup left in the content", not (message.content or "").strip(),
                 repr(message.content))
    history = [SYSTEM] + QUESTION + [
        {"role": "assistant", "content": message.content,
         "tool_calls": [{"id": call.id, "type": "function",
                         "function": {"name": call.function.name,
                                      "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "18 degrees Celsius and sunny"}]
    final = client.chat.completions.create(model=MODEL, messages=history, tools=[WEATHER],
                                           **GREEDY)
    answer = final.choices[0].message.content or ""
    checks.check("the tool result leads to a final answer that uses it",
                 "18" in answer and not final.choices[0].message.tool_calls, repr(answer))
    return first


def check_stream_equals_whole(checks, client, whole):
    content, calls, finish, leaked = reassemble(client.chat.completions.create(
        model=MODEL, messages=QUESTION, tools=[WEATHER], stream=True, **GREEDY))
    expected = whole.choices[0].message
    checks.check("streamed deltas add up to the whole call",
                 [(c["name"], c["arguments"]) for c in calls] ==
                 [(c.function.name, c.function.arguments) for c in expected.tool_calls or []],
                 f"{calls} vs {expected.tool_calls}")
    checks.check("streamed content equals the whole content",
                 content == (expected.content or ""), repr(content))
    checks.check("stream: finish_reason tool_calls, ids present, no markup",
                 finish == "tool_calls" and all(c["id"] for c in calls) and not leaked)


def check_tool_choice_none(checks, client):
    answer = client.chat.completions.create(model=MODEL, messages=QUESTION, tools=[WEATHER],
                                            tool_choice="none", **GREEDY)
    checks.check("tool_choice none: no call", not answer.choices[0].message.tool_calls and
                 answer.choices[0].finish_reason != "tool_calls")


def check_bad_input(checks, client, server):
    cases = [
        ("unknown tool in tool_choice", {"tools": [WEATHER], "tool_choice": {
            "type": "function", "function": {"name": "nope"}}}, "not in 'tools'"),
        ("tool result without a call", {"messages": QUESTION + [
            {"role": "tool", "tool_call_id": "x", "content": "r"}]},
         "no matching assistant tool call"),
        ("tools of the wrong shape", {"tools": [{"type": "function"}]}, "function.name"),
    ]
    for name, fields, words in cases:
        body = {"model": MODEL, "messages": QUESTION, **fields}
        status, text = server.request("POST", "/v1/chat/completions", body)
        checks.check(f"400: {name}", status == 400 and words in text, f"{status} {text}")
    again = client.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=3)
    checks.check("the server still answers after bad input", again.choices[0].message is not None)


def main():
    binary = sys.argv[1]
    checks = Checks()
    with Server(binary, model_directory(binary, MODEL)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused")
        listed = client.models.list().data[0].model_extra
        checks.check("/v1/models names the format", listed.get("tool_call_format") == "hermes",
                     repr(listed))
        checks.check("the start-up log names the format",
                     any("tool calls parsed as hermes" in line for line in server.log))
        whole = check_round_trip(checks, client)
        if whole is not None:
            check_stream_equals_whole(checks, client, whole)
        check_tool_choice_none(checks, client)
        check_bad_input(checks, client, server)
    checks.finish()


if __name__ == "__main__":
    main()
