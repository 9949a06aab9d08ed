#pragma once
// The parts of tokenizer_config.json (and chat_template.jinja) the runtime
// uses: bos/eos token strings, add_bos_token / add_eos_token, chat template.
#include <filesystem>
#include <optional>
#include <string>

namespace mlx_cpp {

struct TokenizerConfig {
  std::string bos_token;  // "" when none
  std::string eos_token;
  std::optional<bool> add_bos_token;  // unset when the file does not say
  std::optional<bool> add_eos_token;
  std::string chat_template;
};

// Reads <dir>/tokenizer_config.json when present (an empty config if not)
// and <dir>/chat_template.jinja, which wins over the config's template.
TokenizerConfig read_tokenizer_config(const std::filesystem::path& dir);

}  // namespace mlx_cpp
