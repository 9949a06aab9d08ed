"""End-to-end structured output (constrained decoding) on the default model
with the official openai client: response_format json_schema (sampled
answers all validate against the schema) and json_object, structured_outputs
regex / choice / grammar, guided_choice, llama.cpp's json_schema field, a
streamed greedy answer equal to the whole one, /v1/completions with a
grammar, four concurrent requests with different grammars (batched, so the
mask is per row), tool_choice required and named enforced (valid calls on
every try), and 400s for bad grammars, after which the server still
answers.

usage: structured_output_e2e.py MLX_CPP_BINARY [MODEL_NAME]"""
import json
import re
import sys
import threading

import jsonschema
import openai

from server_process import DEFAULT_MODEL, Checks, Server, model_directory

# Bounded strings and arrays keep a 135M model's answers well inside max_tokens.
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer", "minimum": 18, "maximum": 99},
        "color": {"type": "string", "enum": ["red", "green", "blue"]},
        "hobbies": {"type": "array", "items": {"type": "string", "maxLength": 16},
                    "maxItems": 3},
    },
    "required": ["name", "age", "color", "hobbies"],
    "additionalProperties": False,
}
PERSON_FORMAT = {"type": "json_schema",
                 "json_schema": {"name": "person", "schema": PERSON, "strict": True}}
PERSON_QUESTION = [{"role": "user", "content": "Describe a person as JSON: their name, age, "
                    "favourite color and hobbies."}]
DATE = r"\d{4}-\d{2}-\d{2}"
DATE_QUESTION = [{"role": "user", "content": "On what date did Apollo 11 land on the Moon?"}]
ANSWERS = ["yes", "no", "maybe"]
CHOICE_QUESTION = [{"role": "user", "content": "Is the sky blue? Answer yes, no or maybe."}]
SUM_GRAMMAR = 'root ::= "(" [0-9]+ " + " [0-9]+ ")"'
SUM_PATTERN = r"\(\d+ \+ \d+\)"
SUM_QUESTION = [{"role": "user", "content": "Write an addition of two small numbers."}]
# An open-ended "describe a cat" makes the 135M model nest objects until
# max_tokens; two named keys keep it short.
CAT_QUESTION = [{"role": "user", "content": 'Give a JSON object with the keys "name" and "age" '
                 "of a cat."}]
ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "enum": ANSWERS}},
                 "required": ["answer"], "additionalProperties": False}
LIMIT = 200


def schema_errors(text, schema):
    """None when text is JSON valid against schema, else why not."""
    try:
        jsonschema.validate(json.loads(text), schema)
        return None
    except (ValueError, jsonschema.ValidationError) as error:
        return str(error).splitlines()[0]


def chat(client, model, messages, **kwargs):
    """(content, finish_reason) of a whole chat answer."""
    answer = client.chat.completions.create(model=model, messages=messages,
                                            max_tokens=kwargs.pop("max_tokens", LIMIT), **kwargs)
    return answer.choices[0].message.content or "", answer.choices[0].finish_reason


def check_json_schema(checks, client, model):
    bad = []
    for seed in range(1, 9):
        text, finish = chat(client, model, PERSON_QUESTION, response_format=PERSON_FORMAT,
                            temperature=1.0, seed=seed)
        why = schema_errors(text, PERSON)
        if why or finish != "stop":
            bad.append(f"seed {seed}: {finish} {text!r} ({why})")
    checks.check("json_schema: 8 sampled answers validate, finish_reason stop", not bad,
                 "; ".join(bad))


def check_json_object(checks, client, model):
    text, finish = chat(client, model, CAT_QUESTION, response_format={"type": "json_object"},
                        temperature=0)
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    checks.check("json_object: the answer is a JSON object",
                 isinstance(parsed, dict) and finish == "stop", f"{finish} {text!r}")


def check_vllm_forms(checks, client, model):
    text, finish = chat(client, model, DATE_QUESTION, temperature=0,
                        extra_body={"structured_outputs": {"regex": DATE}})
    checks.check("structured_outputs regex: the whole answer matches",
                 re.fullmatch(DATE, text) is not None and finish == "stop", f"{finish} {text!r}")
    text, finish = chat(client, model, CHOICE_QUESTION, temperature=0,
                        extra_body={"structured_outputs": {"choice": ANSWERS}})
    checks.check("structured_outputs choice: one of the choices",
                 text in ANSWERS and finish == "stop", f"{finish} {text!r}")
    text, finish = chat(client, model, SUM_QUESTION, temperature=0, max_tokens=40,
                        extra_body={"structured_outputs": {"grammar": SUM_GRAMMAR}})
    checks.check("structured_outputs grammar: matches the equivalent regex",
                 re.fullmatch(SUM_PATTERN, text) is not None and finish == "stop",
                 f"{finish} {text!r}")
    text, finish = chat(client, model, CHOICE_QUESTION, temperature=1.0, seed=3,
                        extra_body={"guided_choice": ANSWERS})
    checks.check("guided_choice: one of the choices", text in ANSWERS and finish == "stop",
                 f"{finish} {text!r}")


def check_llama_cpp_schema(checks, client, model):
    text, finish = chat(client, model, CHOICE_QUESTION, temperature=0,
                        extra_body={"json_schema": ANSWER_SCHEMA})
    why = schema_errors(text, ANSWER_SCHEMA)
    checks.check("llama.cpp json_schema: the answer validates", why is None and finish == "stop",
                 f"{finish} {text!r} ({why})")


def check_stream_equals_whole(checks, client, model):
    settings = dict(model=model, messages=PERSON_QUESTION, response_format=PERSON_FORMAT,
                    temperature=0, max_tokens=LIMIT)
    whole = client.chat.completions.create(**settings)
    expected = whole.choices[0].message.content or ""
    text, finish = "", None
    for chunk in client.chat.completions.create(stream=True, **settings):
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    checks.check("json_schema stream: same text as the whole greedy answer",
                 text == expected and finish == whole.choices[0].finish_reason,
                 f"{text!r} vs {expected!r}")
    why = schema_errors(expected, PERSON)
    checks.check("json_schema greedy: the answer validates", why is None, f"{expected!r} ({why})")


def check_completions(checks, client, model):
    prompt = "Question: Is the sky blue?\nAnswer (yes, no or maybe):"
    answer = client.completions.create(model=model, prompt=prompt, max_tokens=20, temperature=0,
                                       extra_body={"structured_outputs": {"choice": ANSWERS}})
    text = answer.choices[0].text
    checks.check("completions: structured_outputs choice is honoured",
                 text in ANSWERS and answer.choices[0].finish_reason == "stop",
                 f"{answer.choices[0].finish_reason} {text!r}")


def check_concurrent(checks, client, model):
    """Four requests at once, each constrained differently: batched together,
    every row must follow its own grammar."""
    cases = [
        ("json_schema", PERSON_QUESTION, {"response_format": PERSON_FORMAT},
         lambda text: schema_errors(text, PERSON) is None),
        ("regex", DATE_QUESTION, {"extra_body": {"structured_outputs": {"regex": DATE}}},
         lambda text: re.fullmatch(DATE, text) is not None),
        ("choice", CHOICE_QUESTION, {"extra_body": {"structured_outputs": {"choice": ANSWERS}}},
         lambda text: text in ANSWERS),
        ("json_object", CAT_QUESTION, {"response_format": {"type": "json_object"}},
         lambda text: schema_errors(text, {"type": "object"}) is None),
    ]
    results = [None] * len(cases)
    start = threading.Barrier(len(cases))

    def run(index, messages, fields):
        start.wait()
        try:
            results[index] = chat(client, model, messages, temperature=0.7, seed=index, **fields)
        except Exception as error:  # reported as a failed check below
            results[index] = (repr(error), None)

    threads = [threading.Thread(target=run, args=(index, messages, fields))
               for index, (_, messages, fields, _) in enumerate(cases)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    bad = [f"{name}: {finish} {text!r}"
           for (name, _, _, valid), (text, finish) in zip(cases, results)
           if finish != "stop" or not valid(text)]
    checks.check("4 concurrent requests with different grammars all come back valid", not bad,
                 "; ".join(bad))


def check_bad_input(checks, client, model, server):
    cases = [
        ("a schema that cannot compile",
         {"response_format": {"type": "json_schema",
                              "json_schema": {"name": "x", "schema": {"$ref": "#/nope"}}}},
         "cannot compile the json_schema"),
        ("an EBNF with a syntax error",
         {"structured_outputs": {"grammar": 'root ::= ("a" | "b"'}},
         "cannot compile the grammar"),
        ("two forms at once",
         {"response_format": {"type": "json_object"}, "structured_outputs": {"regex": DATE}},
         "not several"),
        ("response_format type xml", {"response_format": {"type": "xml"}},
         "must be text, json_object, json_schema or structural_tag"),
        ("an empty choice list", {"structured_outputs": {"choice": []}}, "non-empty list"),
    ]
    for name, fields, words in cases:
        body = {"model": model, "messages": CHOICE_QUESTION, "max_tokens": 8, **fields}
        status, text = server.request("POST", "/v1/chat/completions", body)
        checks.check(f"400: {name}", status == 400 and words in text, f"{status} {text}")
    text, finish = chat(client, model, CHOICE_QUESTION, temperature=0,
                        extra_body={"structured_outputs": {"choice": ANSWERS}})
    checks.check("the server still answers, constrained, after bad input",
                 text in ANSWERS and finish == "stop", f"{finish} {text!r}")


WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 30},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"], "additionalProperties": False}}}
SEARCH_TOOL = {"type": "function", "function": {
    "name": "search", "description": "Search the web",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string", "maxLength": 40},
        "limit": {"type": "integer", "minimum": 1, "maximum": 10}},
        "required": ["query", "limit"], "additionalProperties": False}}}
TOOLS = {tool["function"]["name"]: tool["function"]["parameters"]
         for tool in (WEATHER_TOOL, SEARCH_TOOL)}


def check_forced_tool_calls(checks, client, model):
    """tool_choice required and named are enforced: even a 135M model whose
    template has no tools gives a call to an offered tool, with arguments
    valid against its schema, on every sampled try."""
    question = [{"role": "user", "content": "What is the weather in Paris?"}]
    for choice, label in (("required", "required"),
                          ({"type": "function", "function": {"name": "search"}}, "named")):
        failures = []
        for seed in range(1, 5):
            answer = client.chat.completions.create(
                model=model, messages=question, tools=[WEATHER_TOOL, SEARCH_TOOL],
                tool_choice=choice, temperature=1.0, seed=seed, max_tokens=120)
            message, finish = answer.choices[0].message, answer.choices[0].finish_reason
            calls = message.tool_calls or []
            problem = None
            if finish != "tool_calls" or len(calls) != 1 or message.content:
                problem = f"{finish} {message}"
            elif label == "named" and calls[0].function.name != "search":
                problem = f"called {calls[0].function.name}"
            elif calls[0].function.name not in TOOLS:
                problem = f"unknown tool {calls[0].function.name}"
            else:
                problem = schema_errors(calls[0].function.arguments,
                                        TOOLS[calls[0].function.name])
            if problem:
                failures.append(f"seed {seed}: {problem}")
        checks.check(f"tool_choice {label}: a valid call on every try", not failures,
                     "; ".join(failures))


def main():
    mlx_cpp = sys.argv[1]
    name = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_MODEL
    checks = Checks()
    with Server(mlx_cpp, model_directory(mlx_cpp, name)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0,
                               timeout=600)
        model = client.models.list().data[0].id
        check_json_schema(checks, client, model)
        check_json_object(checks, client, model)
        check_vllm_forms(checks, client, model)
        check_llama_cpp_schema(checks, client, model)
        check_stream_equals_whole(checks, client, model)
        check_completions(checks, client, model)
        check_concurrent(checks, client, model)
        check_forced_tool_calls(checks, client, model)
        check_bad_input(checks, client, model, server)
    # One access-log line per 400 is expected (and 503s from /health while
    # the model loads); no 5xx, nothing else alarming.
    log = [line for line in server.log if "GET /health" not in line]
    errors = [line for line in log
              if re.search(r" 5\d\d \d+ms|exception|terminate|abort|fatal", line, re.IGNORECASE) or
              (re.search(r"error", line, re.IGNORECASE) and not re.search(r" 4\d\d \d+ms", line))]
    rejected = [line for line in log if re.search(r" 400 \d+ms", line)]
    checks.check("the server log is not full of errors", not errors and len(rejected) <= 5,
                 "\n".join(errors + rejected))
    checks.finish()


if __name__ == "__main__":
    main()
