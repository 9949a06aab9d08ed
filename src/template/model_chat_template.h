#pragma once
// A model directory's chat template and special tokens, found where
// transformers finds them, so the CLI and the server render the same prompt.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace mlx_cpp {

struct ModelChatTemplate {
  std::string source;  // the Jinja template text
  // bos_token, eos_token, unk_token, pad_token as template variables, for
  // those the model defines: {"bos_token": "<s>", ...}.
  nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object();
};

// DIR/chat_template.jinja wins over DIR/tokenizer_config.json's
// "chat_template" (a string, or a list of {name, template} of which
// "default" is used), as in transformers. Special tokens come from
// tokenizer_config.json as a string or {"content": ...}. Throws Error when
// there is no template or the files are malformed.
ModelChatTemplate load_model_chat_template(const std::filesystem::path& model_directory);

// The special tokens alone (for a template given in a file of its own).
nlohmann::ordered_json load_model_special_tokens(const std::filesystem::path& model_directory);
// A template file's text; throws Error when it cannot be read or is empty.
std::string read_chat_template_file(const std::filesystem::path& path);

}  // namespace mlx_cpp
