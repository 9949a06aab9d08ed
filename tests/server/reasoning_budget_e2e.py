"""End-to-end thinking budget on the default model, served with a chat
template that opens a think block in its generation prompt (as Qwen3's
and DeepSeek-R1's do), given with --chat-template-file. SmolLM2 never
closes the block itself, so without a budget the whole answer is
reasoning; with one, the engine writes </think> after exactly that many
tokens (the chosen tokens show it) and the answer follows in `content`.
Covers thinking_token_budget, the server's --reasoning-budget default,
-1 for no limit, a zero budget, a stream equal to the whole answer,
usage.completion_tokens_details.reasoning_tokens, and the anthropic
client's thinking.budget_tokens.

usage: reasoning_budget_e2e.py MLX_CPP_BINARY [MODEL_NAME]"""
import os
import sys
import tempfile

import anthropic
import openai

from server_process import DEFAULT_MODEL, Checks, Server, model_directory

THINKING_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['role'] == 'assistant' and message.get('reasoning_content') %}"
    "{{ '<think>\\n' + message['reasoning_content'] + '\\n</think>\\n\\n' }}{% endif %}"
    "{{ message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{% endif %}")
# An open-ended question: the 135M model writes past max_tokens.
QUESTION = [{"role": "user", "content": "Write a long story about a cat who learns to fly."}]
SERVER_BUDGET = 4
CLOSE = "</think>\n\n"


def ask(client, model, **fields):
    return client.chat.completions.create(model=model, messages=QUESTION, max_tokens=40,
                                          temperature=0, logprobs=True, **fields)


def chosen_tokens(answer):
    return [token.token for token in answer.choices[0].logprobs.content]


def check_budget(checks, client, model, budget, extra_body):
    answer = ask(client, model, extra_body=extra_body)
    message = answer.choices[0].message
    reasoning = getattr(message, "reasoning_content", None) or ""
    tokens = chosen_tokens(answer)
    written = "".join(tokens[budget:])
    checks.check(f"budget {budget}: </think> follows exactly {budget} tokens",
                 written.startswith(CLOSE), repr(tokens[:budget + 6]))
    checks.check(f"budget {budget}: the answer follows in content",
                 bool(message.content and message.content.strip()), repr(message.content))
    checks.check(f"budget {budget}: reasoning is what came before",
                 reasoning.strip() == "".join(tokens[:budget]).strip(),
                 f"{reasoning!r} vs {tokens[:budget]!r}")
    details = answer.usage.completion_tokens_details
    counted = details.reasoning_tokens if details and details.reasoning_tokens else 0
    checks.check(f"budget {budget}: usage counts the reasoning tokens",
                 (counted > 0) == (budget > 0 and bool(reasoning.strip())) and counted <= budget + 1,
                 repr(answer.usage))
    return answer


def main():
    mlx_cpp = sys.argv[1]
    name = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_MODEL
    checks = Checks()
    with tempfile.TemporaryDirectory() as scratch:
        template = os.path.join(scratch, "thinking.jinja")
        with open(template, "w") as file:
            file.write(THINKING_TEMPLATE)
        with Server(mlx_cpp, model_directory(mlx_cpp, name), "--chat-template-file", template,
                    "--reasoning-budget", str(SERVER_BUDGET)) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0,
                                   timeout=600)
            model = client.models.list().data[0].id
            listed = client.models.list().data[0].model_extra or {}
            checks.check("/v1/models names the think tags", "think" in str(listed.get("reasoning")),
                         repr(listed))

            unlimited = ask(client, model, extra_body={"thinking_token_budget": -1})
            message = unlimited.choices[0].message
            checks.check("without a budget the model never leaves the block",
                         not message.content and bool(message.reasoning_content) and
                         unlimited.choices[0].finish_reason == "length" and
                         "</think>" not in "".join(chosen_tokens(unlimited)),
                         repr(message))

            check_budget(checks, client, model, SERVER_BUDGET, {})
            whole = check_budget(checks, client, model, 9, {"thinking_token_budget": 9})
            check_budget(checks, client, model, 0, {"thinking_token_budget": 0})

            stream = client.chat.completions.create(
                model=model, messages=QUESTION, max_tokens=40, temperature=0, stream=True,
                extra_body={"thinking_token_budget": 9})
            reasoning, content = "", ""
            for chunk in stream:
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                reasoning += getattr(delta, "reasoning_content", None) or ""
                content += delta.content or ""
            checks.check("a streamed answer with a budget equals the whole one",
                         reasoning == whole.choices[0].message.reasoning_content and
                         content == whole.choices[0].message.content,
                         f"{reasoning!r} {content!r}")

            status, body = server.request("POST", "/v1/chat/completions", {
                "messages": QUESTION, "thinking_token_budget": "many"})
            checks.check("a budget that is not an integer is a 400 naming the field",
                         status == 400 and "thinking_token_budget" in body, body)

            claude = anthropic.Anthropic(base_url=server.base_url.removesuffix("/v1"),
                                         api_key="unused", max_retries=0)
            reply = claude.messages.create(model=model, max_tokens=40, messages=QUESTION,
                                           extra_body={"temperature": 0},
                                           thinking={"type": "enabled", "budget_tokens": 9})
            kinds = [block.type for block in reply.content]
            checks.check("anthropic: budget_tokens ends the thinking block, text follows",
                         kinds == ["thinking", "text"] and
                         reply.content[0].thinking == whole.choices[0].message.reasoning_content
                         and reply.content[1].text == whole.choices[0].message.content,
                         repr(reply.content))
    checks.finish()


if __name__ == "__main__":
    main()
