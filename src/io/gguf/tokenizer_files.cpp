#include "io/error.h"
#include "io/gguf/gguf_file.h"
#include "io/gguf/tokenizer_synthesis.h"

namespace mlx_cpp::gguf {
namespace {

std::optional<int> token_id(const GgufFile& file, const std::string& key, std::size_t count) {
  const auto* value = file.find("tokenizer.ggml." + key);
  if (value == nullptr) return std::nullopt;
  auto id = value->as_uint();
  if (id >= count) {
    throw Error("[convert] tokenizer.ggml." + key + " = " + std::to_string(id) +
                " is outside the vocabulary of " + std::to_string(count) + " tokens");
  }
  return static_cast<int>(id);
}

bool flag(const GgufFile& file, const std::string& key, bool fallback) {
  const auto* value = file.find(key);
  return value == nullptr ? fallback : value->as_bool();
}

nlohmann::json token_or_null(const GgufVocabulary& vocabulary, std::optional<int> id) {
  if (!id) return nullptr;
  return vocabulary.tokens[*id];
}

nlohmann::json tokenizer_config(const GgufVocabulary& vocabulary, const GgufFile& file) {
  nlohmann::json config{
      {"tokenizer_class", "PreTrainedTokenizerFast"},
      {"add_bos_token", vocabulary.add_bos},
      {"add_eos_token", vocabulary.add_eos},
      {"bos_token", token_or_null(vocabulary, vocabulary.bos)},
      {"eos_token", token_or_null(vocabulary, vocabulary.eos)},
      {"unk_token", token_or_null(vocabulary, vocabulary.unk)},
      {"pad_token", token_or_null(vocabulary, vocabulary.pad)},
      {"clean_up_tokenization_spaces", false},
      {"model_max_length", file.uint_or(vocabulary.architecture + ".context_length", 4096)},
  };
  if (vocabulary.chat_template) config["chat_template"] = *vocabulary.chat_template;
  return config;
}

nlohmann::json generation_config(const GgufVocabulary& vocabulary) {
  nlohmann::json config = nlohmann::json::object();
  if (vocabulary.bos) config["bos_token_id"] = *vocabulary.bos;
  if (vocabulary.pad) config["pad_token_id"] = *vocabulary.pad;
  std::vector<int> stops;
  for (auto id : {vocabulary.eos, vocabulary.eot, vocabulary.eom}) {
    if (id && std::find(stops.begin(), stops.end(), *id) == stops.end()) stops.push_back(*id);
  }
  if (stops.size() == 1) config["eos_token_id"] = stops[0];
  if (stops.size() > 1) config["eos_token_id"] = stops;
  return config;
}

}  // namespace

GgufVocabulary read_vocabulary(const GgufFile& file) {
  GgufVocabulary vocabulary;
  vocabulary.model = file.require("tokenizer.ggml.model").as_string();
  vocabulary.pre = file.string_or("tokenizer.ggml.pre", "default");
  vocabulary.architecture = file.require("general.architecture").as_string();
  for (const auto& token : file.require("tokenizer.ggml.tokens").as_array()) {
    vocabulary.tokens.push_back(token.as_string());
  }
  auto count = vocabulary.tokens.size();
  if (const auto* types = file.find("tokenizer.ggml.token_type")) {
    for (const auto& type : types->as_array())
      vocabulary.types.push_back(static_cast<int>(type.as_int()));
  }
  if (vocabulary.types.empty()) vocabulary.types.assign(count, kTokenNormal);
  if (const auto* scores = file.find("tokenizer.ggml.scores")) {
    for (const auto& score : scores->as_array()) {
      vocabulary.scores.push_back(static_cast<float>(score.as_double()));
    }
  }
  if (const auto* merges = file.find("tokenizer.ggml.merges")) {
    for (const auto& merge : merges->as_array()) vocabulary.merges.push_back(merge.as_string());
  }
  if (vocabulary.types.size() != count ||
      (!vocabulary.scores.empty() && vocabulary.scores.size() != count)) {
    throw Error("[convert] tokenizer.ggml.token_type / scores do not match the " +
                std::to_string(count) + " tokens");
  }
  vocabulary.bos = token_id(file, "bos_token_id", count);
  vocabulary.eos = token_id(file, "eos_token_id", count);
  vocabulary.unk = token_id(file, "unknown_token_id", count);
  vocabulary.pad = token_id(file, "padding_token_id", count);
  vocabulary.eot = token_id(file, "eot_token_id", count);
  vocabulary.eom = token_id(file, "eom_token_id", count);
  vocabulary.add_bos = flag(file, "tokenizer.ggml.add_bos_token", vocabulary.model == "llama");
  vocabulary.add_eos = flag(file, "tokenizer.ggml.add_eos_token", false);
  vocabulary.add_space_prefix =
      flag(file, "tokenizer.ggml.add_space_prefix", vocabulary.model == "llama");
  if (const auto* chat_template = file.find("tokenizer.chat_template")) {
    vocabulary.chat_template = chat_template->as_string();
  }
  return vocabulary;
}

nlohmann::json added_tokens(const GgufVocabulary& vocabulary,
                            const std::vector<std::string>& spellings) {
  auto list = nlohmann::json::array();
  for (std::size_t id = 0; id < vocabulary.tokens.size(); ++id) {
    int type = vocabulary.types[id];
    bool special = type == kTokenControl || type == kTokenUnknown;
    if (!special && type != kTokenUserDefined) continue;
    if (spellings[id] != vocabulary.tokens[id]) continue;
    list.push_back({{"id", id},
                    {"content", vocabulary.tokens[id]},
                    {"single_word", false},
                    {"lstrip", false},
                    {"rstrip", false},
                    {"normalized", false},
                    {"special", special}});
  }
  return list;
}

nlohmann::json post_processor(const GgufVocabulary& vocabulary) {
  bool bos = vocabulary.add_bos && vocabulary.bos;
  bool eos = vocabulary.add_eos && vocabulary.eos;
  if (!bos && !eos) return nullptr;
  nlohmann::json special = nlohmann::json::object();
  // [bos] $A [eos], and for pairs the same again for $B with type id 1.
  auto sequence = [&](const char* name, int type_id) {
    auto items = nlohmann::json::array();
    auto add_special = [&](int id) {
      const auto& token = vocabulary.tokens[id];
      items.push_back({{"SpecialToken", {{"id", token}, {"type_id", type_id}}}});
      special[token] = {{"id", token}, {"ids", {id}}, {"tokens", {token}}};
    };
    if (bos) add_special(*vocabulary.bos);
    items.push_back({{"Sequence", {{"id", name}, {"type_id", type_id}}}});
    if (eos) add_special(*vocabulary.eos);
    return items;
  };
  auto single = sequence("A", 0);
  auto pair = single;
  for (auto& item : sequence("B", 1)) pair.push_back(item);
  return {{"type", "TemplateProcessing"},
          {"single", single},
          {"pair", pair},
          {"special_tokens", special}};
}

TokenizerFiles synthesize_tokenizer(const GgufFile& file) {
  auto vocabulary = read_vocabulary(file);
  TokenizerFiles files;
  if (vocabulary.model == "gpt2") {
    files.tokenizer = byte_level_tokenizer(vocabulary);
  } else if (vocabulary.model == "llama") {
    files.tokenizer = sentencepiece_tokenizer(vocabulary);
  } else {
    throw Error("[convert] unsupported GGUF tokenizer model '" + vocabulary.model +
                "' (supported: gpt2, llama)");
  }
  files.tokenizer_config = tokenizer_config(vocabulary, file);
  files.special_tokens_map = nlohmann::json::object();
  for (const char* name : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    if (!files.tokenizer_config[name].is_null()) {
      files.special_tokens_map[name] = files.tokenizer_config[name];
    }
  }
  files.generation_config = generation_config(vocabulary);
  return files;
}

}  // namespace mlx_cpp::gguf
