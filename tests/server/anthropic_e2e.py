"""End-to-end Anthropic Messages API on Qwen2.5-Coder-1.5B-Instruct (a
template with tool calls) with the official anthropic client: a text
message, a stream whose text equals the whole greedy answer, a stop sequence
named in the answer, tool use -> tool_result -> a final answer (whole and
streamed), tool_choice any, count_tokens, and a 400 in Anthropic's shape.

usage: anthropic_e2e.py MLX_CPP_BINARY"""
import sys

import anthropic

from server_process import Checks, Server, model_directory

MODEL = "qwen2.5-coder-1.5b-instruct"
WEATHER = {"name": "get_weather", "description": "Get the current weather in a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}
QUESTION = [{"role": "user", "content": "What is the weather in Paris right now?"}]
GREETING = [{"role": "user", "content": "Write one short sentence about the sea."}]
# Without it the 1.5B model calls the tool again after its result.
SYSTEM = ("You are a helpful assistant. When a tool result answers the question, reply to "
          "the user in plain words.")
# This client version has no sampling arguments: they go in the body as extra fields.
GREEDY = {"model": MODEL, "max_tokens": 120, "extra_body": {"temperature": 0}}


def text_of(message):
    return "".join(block.text for block in message.content if block.type == "text")


def check_text(checks, client):
    message = client.messages.create(messages=GREETING, **GREEDY)
    checks.check("a text message", message.type == "message" and message.role == "assistant" and
                 message.id.startswith("msg_") and text_of(message).strip(), repr(message))
    checks.check("stop_reason end_turn", message.stop_reason == "end_turn", message.stop_reason)
    usage = message.usage
    checks.check("usage counts input and output", usage.input_tokens +
                 (usage.cache_read_input_tokens or 0) > 0 and usage.output_tokens > 0, repr(usage))
    return message


def check_stream(checks, client, whole):
    with client.messages.stream(messages=GREETING, **GREEDY) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    checks.check("streamed text equals the whole greedy answer", streamed == text_of(whole),
                 f"{streamed!r} vs {text_of(whole)!r}")
    checks.check("the stream's final message", final.stop_reason == "end_turn" and
                 final.usage.output_tokens == whole.usage.output_tokens, repr(final))


def check_stop_sequence(checks, client, whole):
    words = text_of(whole).split()
    if len(words) < 3:
        checks.check("an answer long enough to stop in", False, repr(words))
        return
    stop = " " + words[2]
    message = client.messages.create(messages=GREETING, stop_sequences=[stop, "#never#"], **GREEDY)
    checks.check("a stop sequence is named", message.stop_reason == "stop_sequence" and
                 message.stop_sequence == stop, f"{message.stop_reason} {message.stop_sequence!r}")
    checks.check("the answer ends before it", text_of(message) == text_of(whole).split(stop)[0],
                 repr(text_of(message)))


def tool_uses(message):
    return [block for block in message.content if block.type == "tool_use"]


def check_tool_round_trip(checks, client):
    first = client.messages.create(messages=QUESTION, tools=[WEATHER], **GREEDY)
    calls = tool_uses(first)
    checks.check("a tool_use block with the input", len(calls) == 1 and
                 calls[0].name == "get_weather" and calls[0].input.get("city") == "Paris",
                 repr(first.content))
    checks.check("stop_reason tool_use", first.stop_reason == "tool_use", first.stop_reason)
    if not calls:
        return
    history = QUESTION + [
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": calls[0].id,
                                      "content": "18 degrees Celsius and sunny"}]}]
    final = client.messages.create(system=SYSTEM, messages=history, tools=[WEATHER], **GREEDY)
    checks.check("the tool result leads to a final answer that uses it",
                 "18" in text_of(final) and not tool_uses(final) and
                 final.stop_reason == "end_turn", repr(final.content))

    with client.messages.stream(messages=QUESTION, tools=[WEATHER], **GREEDY) as stream:
        streamed = stream.get_final_message()
    streamed_calls = tool_uses(streamed)
    checks.check("a streamed tool_use adds up to the whole one",
                 [(c.name, c.input) for c in streamed_calls] == [(c.name, c.input) for c in calls]
                 and streamed.stop_reason == "tool_use", repr(streamed.content))


def check_tool_choice_any(checks, client):
    message = client.messages.create(messages=GREETING, tools=[WEATHER],
                                     tool_choice={"type": "any"}, **GREEDY)
    checks.check("tool_choice any gives a tool_use block",
                 len(tool_uses(message)) == 1 and message.stop_reason == "tool_use",
                 repr(message.content))


def check_count_tokens(checks, client):
    plain = client.messages.count_tokens(model=MODEL, messages=QUESTION)
    with_tools = client.messages.count_tokens(model=MODEL, messages=QUESTION, tools=[WEATHER])
    checks.check("count_tokens counts the prompt", plain.input_tokens > 0, repr(plain))
    checks.check("count_tokens counts the tools too",
                 with_tools.input_tokens > plain.input_tokens, repr(with_tools))


def check_bad_request(checks, client):
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgo="}}
    try:
        client.messages.create(messages=[{"role": "user", "content": [image]}], **GREEDY)
        checks.check("an image block is refused", False, "no error")
    except anthropic.BadRequestError as error:
        body = error.body or {}
        checks.check("an image block is refused in Anthropic's shape",
                     body.get("type") == "error" and
                     body.get("error", {}).get("type") == "invalid_request_error" and
                     "image" in body["error"].get("message", ""), repr(body))


def main():
    binary = sys.argv[1]
    checks = Checks()
    with Server(binary, model_directory(binary, MODEL)) as server:
        client = anthropic.Anthropic(base_url=server.base_url.removesuffix("/v1"),
                                     api_key="unused", max_retries=0, timeout=600)
        whole = check_text(checks, client)
        check_stream(checks, client, whole)
        check_stop_sequence(checks, client, whole)
        check_tool_round_trip(checks, client)
        check_tool_choice_any(checks, client)
        check_count_tokens(checks, client)
        check_bad_request(checks, client)
    checks.finish()


if __name__ == "__main__":
    main()
