"""Sixteen clients at once against `mlx-cpp serve` on the default model
(loopback): every one gets a complete answer, and each answer equals the
one the same greedy request gets when sent alone.

usage: concurrency_e2e.py MLX_CPP_BINARY [MODEL_NAME]"""
import sys
from concurrent.futures import ThreadPoolExecutor

import openai

from server_process import DEFAULT_MODEL, Checks, Server, model_directory

CLIENTS = 16
TOPICS = ["cats", "rain", "bread", "rivers", "chess", "winter", "bees", "trains", "salt",
          "maps", "violins", "glass", "owls", "tea", "stars", "boats"]


def ask(base_url, index):
    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=900)
    messages = [{"role": "user", "content": f"One sentence about {TOPICS[index]}."}]
    if index % 2:
        text, finish = "", None
        for chunk in client.chat.completions.create(model="m", messages=messages, max_tokens=8,
                                                    temperature=0, stream=True):
            for choice in chunk.choices:
                text += choice.delta.content or ""
                finish = choice.finish_reason or finish
        return text, finish
    answer = client.chat.completions.create(model="m", messages=messages, max_tokens=8,
                                            temperature=0)
    return answer.choices[0].message.content, answer.choices[0].finish_reason


def main():
    mlx_cpp = sys.argv[1]
    name = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_MODEL
    directory = model_directory(mlx_cpp, name)
    checks = Checks()
    with Server(mlx_cpp, directory, "--quiet") as server:
        alone = [ask(server.base_url, index) for index in range(CLIENTS)]
        with ThreadPoolExecutor(CLIENTS) as pool:
            together = list(pool.map(lambda index: ask(server.base_url, index), range(CLIENTS)))
        for index in range(CLIENTS):
            text, finish = together[index]
            checks.check(f"client {index}: complete", finish in ("stop", "length") and text,
                         f"{finish} {text!r}")
            checks.check(f"client {index}: same answer as alone", (text, finish) == alone[index],
                         f"{text!r} vs {alone[index][0]!r}")
    checks.finish()


if __name__ == "__main__":
    main()
