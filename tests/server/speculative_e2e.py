"""Speculative decoding through `mlx-cpp serve`, end to end on the default
model with the official openai client (the model drafts for itself, and
prompt lookup needs no second model):
  * greedy answers with "speculative": "prompt-lookup" or "draft" (confidence
    scheduled and fixed) equal the plain answer, whole and streamed;
  * usage carries completion_tokens_details (accepted and rejected drafts);
  * /metrics shows proposed and accepted drafts and the acceptance rate per
    source;
  * four concurrent clients, speculating and plain, each get their solo
    answer;
  * a bad source or draft count is a 400 naming the field.

usage: speculative_e2e.py MLX_CPP_BINARY [MODEL_NAME]"""
import sys
import threading

import openai

from server_process import DEFAULT_MODEL, Checks, Server, model_directory

# An answer that repeats its question, so prompt lookup has n-grams to copy.
REPEAT = [{"role": "user", "content":
           "Repeat this sentence exactly, twice: the quick brown fox jumps over the lazy dog."}]


def chat(client, messages, speculative=None, stream=False, max_tokens=48):
    extra = {} if speculative is None else {"speculative": speculative}
    if not stream:
        response = client.chat.completions.create(model="m", messages=messages, temperature=0,
                                                  max_tokens=max_tokens, extra_body=extra)
        return response.choices[0].message.content, response.usage
    text, usage = "", None
    for chunk in client.chat.completions.create(model="m", messages=messages, temperature=0,
                                                max_tokens=max_tokens, stream=True,
                                                stream_options={"include_usage": True},
                                                extra_body=extra):
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
    return text, usage


def check_lossless(checks, client):
    plain, plain_usage = chat(client, REPEAT)
    checks.check("plain: no completion_tokens_details",
                 getattr(plain_usage, "completion_tokens_details", None) is None,
                 plain_usage)
    for source in ("prompt-lookup", "draft"):
        # Confidence scheduling (the default) may decode plainly where
        # drafts do not pay on this machine; the fixed schedule always drafts.
        text, _ = chat(client, REPEAT, source)
        checks.check(f"{source}: the plain answer", text == plain, f"{text!r} vs {plain!r}")
        text, usage = chat(client, REPEAT, {"source": source, "schedule": "fixed"})
        checks.check(f"{source}, fixed: the plain answer", text == plain,
                     f"{text!r} vs {plain!r}")
        details = usage.completion_tokens_details
        accepted = details.accepted_prediction_tokens if details else None
        rejected = details.rejected_prediction_tokens if details else None
        checks.check(f"{source}: usage counts accepted drafts",
                     accepted is not None and accepted > 0 and rejected is not None and
                     rejected >= 0, details)
        streamed, _ = chat(client, REPEAT, {"source": source, "draft_tokens": 5}, stream=True)
        checks.check(f"{source}: streamed, k=5, the plain answer", streamed == plain,
                     f"{streamed!r} vs {plain!r}")


def check_metrics(checks, server):
    status, body = server.request("GET", "/metrics")
    for source in ("prompt-lookup", "draft"):
        for family in ("mlx_cpp_draft_tokens_proposed_total", "mlx_cpp_draft_tokens_accepted_total",
                       "mlx_cpp_draft_acceptance_rate", "mlx_cpp_draft_mean_accepted_length"):
            line = f'{family}{{source="{source}"}}'
            checks.check(f"/metrics: {line}", status == 200 and line in body)


def check_concurrent(checks, client):
    questions = [[{"role": "user", "content": f"Count from {n} to {n + 9}, comma separated."}]
                 for n in (1, 20, 300, 4000)]
    sources = ("prompt-lookup", None, "draft", "prompt-lookup")
    solo = [chat(client, q)[0] for q in questions]
    answers = [None] * 4

    def run(index):
        answers[index] = chat(client, questions[index], sources[index])[0]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i in range(4):
        checks.check(f"concurrent client {i} ({sources[i]}): its solo answer",
                     answers[i] == solo[i], f"{answers[i]!r} vs {solo[i]!r}")


def check_refusals(checks, server):
    body = {"model": "m", "messages": REPEAT, "max_tokens": 4}
    for bad in ("medusa", {"source": "draft", "draft_tokens": 0}, 7,
                {"source": "draft", "schedule": "sometimes"}):
        status, text = server.request("POST", "/v1/chat/completions", {**body, "speculative": bad})
        checks.check(f"speculative={bad!r}: 400 naming the field",
                     status == 400 and "speculative" in text, f"{status} {text[:200]}")


def main():
    mlx_cpp = sys.argv[1]
    name = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_MODEL
    directory = model_directory(mlx_cpp, name)
    checks = Checks()
    with Server(mlx_cpp, directory, "--quiet", "--max-batch", "4",
                "--draft-model", directory, "--spec", "none") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="none")
        check_lossless(checks, client)
        check_metrics(checks, server)
        check_concurrent(checks, client)
        check_refusals(checks, server)
    checks.finish()


if __name__ == "__main__":
    main()
