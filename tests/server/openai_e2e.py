"""End-to-end checks of `mlx-cpp serve` on the default model with the
official openai client: chat and completions (whole and streamed), stop
strings (one spanning two tokens), seeds, logprobs, usage and cached tokens
on a second turn, max_tokens -> length, and parity with `mlx-cpp generate`.

usage: openai_e2e.py MLX_CPP_BINARY [MODEL_NAME]"""
import subprocess
import sys

import openai

from server_process import DEFAULT_MODEL, Checks, Server, model_directory

QUESTION = [{"role": "user", "content": "Name three colors of the rainbow."}]


def stream_chat(client, **kwargs):
    """(text, finish_reason, usage, logprob entries, chunks) of a streamed chat."""
    text, finish, usage, entries, chunks = "", None, None, [], []
    for chunk in client.chat.completions.create(stream=True, **kwargs):
        chunks.append(chunk)
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
            if choice.logprobs and choice.logprobs.content:
                entries.extend(choice.logprobs.content)
    return text, finish, usage, entries, chunks


def check_chat(checks, client, model):
    whole = client.chat.completions.create(model=model, messages=QUESTION, max_tokens=40,
                                           temperature=0)
    content = whole.choices[0].message.content
    checks.check("chat: non-empty answer", bool(content), repr(content))
    checks.check("chat: finish_reason stop or length",
                 whole.choices[0].finish_reason in ("stop", "length"))
    checks.check("chat: model id", whole.model == model, whole.model)
    usage = whole.usage
    checks.check("chat: usage adds up",
                 usage.total_tokens == usage.prompt_tokens + usage.completion_tokens and
                 usage.prompt_tokens > 0 and 0 < usage.completion_tokens <= 40)
    text, finish, stream_usage, _, chunks = stream_chat(
        client, model=model, messages=QUESTION, max_tokens=40, temperature=0,
        stream_options={"include_usage": True})
    checks.check("chat stream: same text as non-streamed (greedy)", text == content,
                 f"{text!r} vs {content!r}")
    checks.check("chat stream: first chunk carries the role",
                 chunks[0].choices[0].delta.role == "assistant")
    checks.check("chat stream: finish_reason", finish == whole.choices[0].finish_reason)
    checks.check("chat stream: usage chunk last",
                 stream_usage is not None and chunks[-1].usage is not None and
                 stream_usage.completion_tokens == usage.completion_tokens)
    return content


def check_completions(checks, client, model):
    whole = client.completions.create(model=model, prompt="The capital of France is",
                                      max_tokens=12, temperature=0)
    text = whole.choices[0].text
    checks.check("completions: text", bool(text.strip()), repr(text))
    streamed = "".join(chunk.choices[0].text
                       for chunk in client.completions.create(
                           model=model, prompt="The capital of France is", max_tokens=12,
                           temperature=0, stream=True) if chunk.choices)
    checks.check("completions stream: same text", streamed == text, f"{streamed!r} vs {text!r}")
    short = client.completions.create(model=model, prompt="Once upon a time", max_tokens=3,
                                      temperature=0)
    checks.check("max_tokens -> finish_reason length",
                 short.choices[0].finish_reason == "length" and
                 short.usage.completion_tokens == 3, str(short))


def spanning_stop(tokens):
    """A stop string made of the end of one token and the start of the next,
    whose first occurrence in the text is at that boundary; (stop, prefix)."""
    text = "".join(tokens)
    offset = 0
    for index in range(len(tokens) - 1):
        offset += len(tokens[index])
        left, right = tokens[index], tokens[index + 1]
        if len(left.strip()) >= 2 and len(right.strip()) >= 2:
            stop = text[offset - 2:offset + 2]
            if text.find(stop) == offset - 2:
                return stop, text[:offset - 2]
    return None, None


def check_stop_strings(checks, client, model):
    prompt = "Write a sentence about the sea:"
    base = client.completions.create(model=model, prompt=prompt, max_tokens=30, temperature=0,
                                     logprobs=0)
    tokens = base.choices[0].logprobs.tokens
    stop, prefix = spanning_stop(tokens)
    checks.check("stop: found a stop string spanning two tokens", stop is not None, str(tokens))
    if stop is None:
        return
    cut = client.completions.create(model=model, prompt=prompt, max_tokens=30, temperature=0,
                                    stop=[stop])
    checks.check("stop: text ends before the stop string", cut.choices[0].text == prefix,
                 f"{cut.choices[0].text!r} vs {prefix!r} (stop {stop!r})")
    checks.check("stop: finish_reason stop", cut.choices[0].finish_reason == "stop")
    pieces = [chunk.choices[0].text for chunk in client.completions.create(
        model=model, prompt=prompt, max_tokens=30, temperature=0, stop=stop, stream=True)
        if chunk.choices]
    checks.check("stop stream: no part of the stop string leaks", "".join(pieces) == prefix,
                 f"{''.join(pieces)!r} vs {prefix!r}")
    chat_base = client.chat.completions.create(model=model, messages=QUESTION, max_tokens=30,
                                               temperature=0).choices[0].message.content
    word = chat_base.split()[1] if len(chat_base.split()) > 1 else chat_base[:3]
    chat_cut = client.chat.completions.create(model=model, messages=QUESTION, max_tokens=30,
                                              temperature=0, stop=word)
    expected = chat_base[:chat_base.find(word)]
    checks.check("stop: chat", chat_cut.choices[0].message.content == expected and
                 chat_cut.choices[0].finish_reason == "stop",
                 f"{chat_cut.choices[0].message.content!r} vs {expected!r}")


def check_seeds(checks, client, model, mlx_cpp, directory):
    settings = dict(model=model, messages=QUESTION, max_tokens=24, temperature=0.9, top_p=1.0,
                    extra_body={"top_k": 0, "min_p": 0.0})
    first = client.chat.completions.create(seed=42, **settings).choices[0].message.content
    second = client.chat.completions.create(seed=42, **settings).choices[0].message.content
    checks.check("seed: same seed, same text", first == second, f"{first!r} vs {second!r}")
    generated = subprocess.run(
        [mlx_cpp, "generate", "--model", directory, "--chat", "-p", QUESTION[0]["content"],
         "--max-tokens", "24", "--temp", "0.9", "--seed", "42"],
        capture_output=True, text=True)
    cli_text = generated.stdout[:-1] if generated.stdout.endswith("\n") else generated.stdout
    checks.check("seed: equals `mlx-cpp generate` with the same settings",
                 generated.returncode == 0 and cli_text == first, f"{cli_text!r} vs {first!r}")


def check_logprobs(checks, client, model):
    whole = client.chat.completions.create(model=model, messages=QUESTION, max_tokens=8,
                                           temperature=0, logprobs=True, top_logprobs=3)
    entries = whole.choices[0].logprobs.content
    checks.check("logprobs: one entry per token",
                 len(entries) == whole.usage.completion_tokens, str(len(entries)))
    checks.check("logprobs: values are log-probabilities",
                 all(entry.logprob <= 0 for entry in entries))
    checks.check("logprobs: three alternatives, best first",
                 all(len(e.top_logprobs) == 3 and
                     e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob >=
                     e.top_logprobs[2].logprob for e in entries))
    checks.check("logprobs: greedy picks the top alternative",
                 all(e.token == e.top_logprobs[0].token and
                     abs(e.logprob - e.top_logprobs[0].logprob) < 1e-6 for e in entries))
    checks.check("logprobs: tokens spell the answer",
                 "".join(e.token for e in entries) == whole.choices[0].message.content)
    _, _, _, streamed, _ = stream_chat(client, model=model, messages=QUESTION, max_tokens=8,
                                       temperature=0, logprobs=True, top_logprobs=3)
    checks.check("logprobs stream: same tokens",
                 [e.token for e in streamed] == [e.token for e in entries])


def check_second_turn(checks, client, model):
    first = client.chat.completions.create(model=model, messages=QUESTION, max_tokens=20,
                                           temperature=0)
    conversation = QUESTION + [
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "And two more?"}]
    second = client.chat.completions.create(model=model, messages=conversation, max_tokens=20,
                                            temperature=0)
    cached = second.usage.prompt_tokens_details.cached_tokens
    checks.check("second turn: prompt prefix reused (cached_tokens)",
                 first.usage.prompt_tokens <= cached < second.usage.prompt_tokens,
                 f"cached {cached}, first prompt {first.usage.prompt_tokens}, "
                 f"second prompt {second.usage.prompt_tokens}")


def main():
    mlx_cpp = sys.argv[1]
    name = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_MODEL
    directory = model_directory(mlx_cpp, name)
    checks = Checks()
    with Server(mlx_cpp, directory) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0,
                               timeout=600)
        models = client.models.list()
        model = models.data[0].id
        checks.check("models: lists the served model", model == name, model)
        architecture = models.data[0].model_extra.get("architecture")
        checks.check("models: says which graph serves the model",
                     architecture == {"model_type": "llama", "tier": "generic",
                                      "mixture_of_experts": False}, architecture)
        check_chat(checks, client, model)
        check_completions(checks, client, model)
        check_stop_strings(checks, client, model)
        check_seeds(checks, client, model, mlx_cpp, directory)
        check_logprobs(checks, client, model)
        check_second_turn(checks, client, model)
        other = client.chat.completions.create(model="some-other-name", messages=QUESTION,
                                               max_tokens=2)
        checks.check("another model name is served by the one model", other.model == model)
    checks.finish()


if __name__ == "__main__":
    main()
