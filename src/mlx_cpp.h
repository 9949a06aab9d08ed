#pragma once
// mlx-cpp as a library: open a model directory, render a chat, generate.
//
//   #include <mlx_cpp.h>
//   auto session = mlx_cpp::Session::open("/path/to/model");
//   mlx_cpp::TextRequest request;
//   request.prompt_ids = session->encode("The capital of France is", true);
//   request.options.max_tokens = 32;
//   session->generate(request, [](const mlx_cpp::TextChunk& chunk) {
//     std::cout << chunk.text << std::flush;
//     return true;  // false stops generation
//   });
//
// A Session owns one model, its tokenizer and chat template, and a cache
// that is reused for the longest common prefix between calls. It is not
// thread-safe: use it from one thread (the server runs one engine thread).
// Errors a user can fix (bad files, bad options) throw mlx_cpp::Error.
//
// With LoRA adapters (mlx-lm's directories; stacked in order):
//   request.options.adapters =
//       mlx_cpp::load_adapter_stack(session->runtime().model(), {"adapters/"});
#include "engine/adapter_registry.h"  // IWYU pragma: export
#include "engine/session.h"           // IWYU pragma: export
#include "io/error.h"                 // IWYU pragma: export
