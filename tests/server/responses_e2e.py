"""End-to-end OpenAI Responses API on Qwen2.5-Coder-1.5B-Instruct (a
template with tool calls) with the official openai client: a text response,
a stream whose text equals the whole greedy answer, a function call ->
function_call_output -> final answer (whole, streamed, and continued with
previous_response_id), GET and DELETE of a stored response, and a 400.

usage: responses_e2e.py MLX_CPP_BINARY"""
import json
import sys

import openai

from server_process import Checks, Server, model_directory

MODEL = "qwen2.5-coder-1.5b-instruct"
WEATHER = {"type": "function", "name": "get_weather",
           "description": "Get the current weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}
QUESTION = "What is the weather in Paris right now?"
GREETING = "Write one short sentence about the sea."
# Without it the 1.5B model calls the tool again after its result.
INSTRUCTIONS = ("You are a helpful assistant. When a tool result answers the question, reply "
                "to the user in plain words.")
GREEDY = {"model": MODEL, "temperature": 0, "max_output_tokens": 120}


def calls_of(response):
    return [item for item in response.output if item.type == "function_call"]


def check_text(checks, client):
    response = client.responses.create(input=GREETING, **GREEDY)
    checks.check("a text response", response.object == "response" and
                 response.id.startswith("resp_") and response.status == "completed" and
                 response.output_text.strip(), repr(response))
    usage = response.usage
    checks.check("usage counts input and output",
                 usage.input_tokens > 0 and usage.output_tokens > 0 and
                 usage.total_tokens == usage.input_tokens + usage.output_tokens, repr(usage))
    return response


def check_stream(checks, client, whole):
    streamed, names, final = "", [], None
    for event in client.responses.create(input=GREETING, stream=True, **GREEDY):
        names.append(event.type)
        if event.type == "response.output_text.delta":
            streamed += event.delta
        elif event.type == "response.completed":
            final = event.response
    checks.check("streamed text equals the whole greedy answer", streamed == whole.output_text,
                 f"{streamed!r} vs {whole.output_text!r}")
    checks.check("the stream opens and completes", names[:2] == [
        "response.created", "response.in_progress"] and names[-1] == "response.completed", names)
    checks.check("the completed response holds the text",
                 final is not None and final.output_text == whole.output_text, repr(final))


def check_function_round_trip(checks, client):
    # No instructions here: the 1.5B model writes its call under its
    # template's default system prompt; with ours it describes the call.
    first = client.responses.create(input=QUESTION, tools=[WEATHER], **GREEDY)
    calls = calls_of(first)
    checks.check("a function_call item", len(calls) == 1 and calls[0].name == "get_weather" and
                 json.loads(calls[0].arguments).get("city") == "Paris", repr(first.output))
    if not calls:
        return
    output = {"type": "function_call_output", "call_id": calls[0].call_id,
              "output": "18 degrees Celsius and sunny"}
    # The whole conversation sent back, as a client without the store does.
    history = [{"role": "user", "content": QUESTION}] + [
        item.model_dump(exclude_none=True) for item in first.output] + [output]
    final = client.responses.create(input=history, tools=[WEATHER], instructions=INSTRUCTIONS,
                                    **GREEDY)
    checks.check("the function output leads to a final answer that uses it",
                 "18" in final.output_text and not calls_of(final), repr(final.output))
    # The same turn continued from the stored response.
    chained = client.responses.create(input=[output], previous_response_id=first.id,
                                      tools=[WEATHER], instructions=INSTRUCTIONS, **GREEDY)
    checks.check("previous_response_id continues the conversation",
                 chained.output_text == final.output_text, repr(chained.output_text))

    arguments, streamed_call = "", None
    for event in client.responses.create(input=QUESTION, tools=[WEATHER], stream=True,
                                         **GREEDY):
        if event.type == "response.function_call_arguments.delta":
            arguments += event.delta
        elif event.type == "response.output_item.done" and event.item.type == "function_call":
            streamed_call = event.item
    checks.check("a streamed function call adds up to the whole one",
                 streamed_call is not None and streamed_call.name == calls[0].name and
                 arguments == streamed_call.arguments == calls[0].arguments, repr(streamed_call))


def check_get_and_delete(checks, client, whole):
    got = client.responses.retrieve(whole.id)
    checks.check("GET returns the stored response", got.output_text == whole.output_text,
                 repr(got))
    deleted = client.responses.delete(whole.id)
    checks.check("DELETE answers", deleted is None or getattr(deleted, "id", whole.id) == whole.id,
                 repr(deleted))
    try:
        client.responses.retrieve(whole.id)
        checks.check("a deleted response is gone", False, "still there")
    except openai.NotFoundError:
        checks.check("a deleted response is gone", True)


def check_bad_request(checks, client):
    image = {"role": "user", "content": [{"type": "input_image",
                                          "image_url": "https://example.com/a.png"}]}
    try:
        client.responses.create(input=[image], **GREEDY)
        checks.check("an input_image part is refused", False, "no error")
    except openai.BadRequestError as error:
        body = error.body or {}
        checks.check("an input_image part is refused", "input_image" in body.get("message", ""),
                     repr(body))


def main():
    binary = sys.argv[1]
    checks = Checks()
    with Server(binary, model_directory(binary, MODEL)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0,
                               timeout=600)
        whole = check_text(checks, client)
        check_stream(checks, client, whole)
        check_function_round_trip(checks, client)
        check_get_and_delete(checks, client, whole)
        check_bad_request(checks, client)
    checks.finish()


if __name__ == "__main__":
    main()
