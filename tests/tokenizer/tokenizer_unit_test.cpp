// Loading errors, special tokens, BOS handling and config reading on a tiny
// hand-written tokenizer.
#include <gtest/gtest.h>
#include <unistd.h>

#include "io/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_files.h"

namespace mlx_cpp {
namespace {

using testing::kBosId;
using testing::kEosId;
using testing::TemporaryDirectory;
using testing::tiny_tokenizer_json;

std::unique_ptr<Tokenizer> load(const TemporaryDirectory& dir, const nlohmann::json& json) {
  dir.write("tokenizer.json", json.dump());
  return Tokenizer::from_directory(dir.path());
}

// Expects loading to throw Error whose message contains `needle`.
void expect_load_error(const nlohmann::json& json, const std::string& needle) {
  TemporaryDirectory dir;
  try {
    load(dir, json);
    ADD_FAILURE() << "expected an error mentioning " << needle;
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
  }
}

TEST(Tokenizer, MissingFileIsAnError) {
  TemporaryDirectory dir;
  EXPECT_THROW(Tokenizer::from_directory(dir.path()), Error);
}

TEST(Tokenizer, MalformedJsonIsAnError) {
  TemporaryDirectory dir;
  dir.write("tokenizer.json", "{\"model\": {\"type\": \"BPE\", ");
  EXPECT_THROW(Tokenizer::from_directory(dir.path()), Error);
}

TEST(Tokenizer, UnsupportedComponentsAreNamed) {
  auto json = tiny_tokenizer_json();
  json["model"]["type"] = "WordPiece";
  expect_load_error(json, "WordPiece");
  json = tiny_tokenizer_json();
  json["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  expect_load_error(json, "BertPreTokenizer");
  json = tiny_tokenizer_json();
  json["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", "AA=="}};
  expect_load_error(json, "Precompiled");
  json = tiny_tokenizer_json();
  json["decoder"] = {{"type", "WordPiece"}};
  expect_load_error(json, "WordPiece");
}

TEST(Tokenizer, MalformedFieldsAreErrors) {
  auto json = tiny_tokenizer_json();
  json["model"]["merges"] = {"h zz"};
  expect_load_error(json, "merge #0");
  json = tiny_tokenizer_json();
  json["model"]["merges"] = {"nospace"};
  expect_load_error(json, "merge #0");
  json = tiny_tokenizer_json();
  json["model"].erase("vocab");
  expect_load_error(json, "vocab");
  json = tiny_tokenizer_json();
  json["pre_tokenizer"] = {
      {"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  expect_load_error(json, "regex");
  json = tiny_tokenizer_json();
  json["added_tokens"] = {{{"content", "<x>"}}};
  expect_load_error(json, "added_tokens[0]");
  // An id past any real vocabulary would size the id table to gigabytes
  // (and 2^31 - 1 overflowed it).
  json = tiny_tokenizer_json();
  json["model"]["vocab"]["far"] = 2147483647;
  expect_load_error(json, "invalid id 2147483647");
  json = tiny_tokenizer_json();
  json["added_tokens"] = {{{"id", -1}, {"content", "<x>"}}};
  expect_load_error(json, "added_tokens[0] has invalid id -1");
}

TEST(Tokenizer, EncodesWithMergesAndDecodes) {
  TemporaryDirectory dir;
  const auto tokenizer = load(dir, tiny_tokenizer_json());
  const auto ids = tokenizer->encode("hello hell", false);
  // "hello" merges fully; " hell" is the space byte and then "hell".
  const TokenId space = *tokenizer->token_to_id("\xC4\xA0");
  EXPECT_EQ(ids, (std::vector<TokenId>{259, space, 258}));
  EXPECT_EQ(tokenizer->decode(ids, true), "hello hell");
}

TEST(Tokenizer, EmptyString) {
  TemporaryDirectory dir;
  const auto tokenizer = load(dir, tiny_tokenizer_json());
  EXPECT_TRUE(tokenizer->encode("", false).empty());
  EXPECT_EQ(tokenizer->encode("", true), std::vector<TokenId>{kBosId});
  EXPECT_EQ(tokenizer->decode({}, true), "");
}

TEST(Tokenizer, SpecialTokensAreSplitOutAndSkippable) {
  TemporaryDirectory dir;
  const auto tokenizer = load(dir, tiny_tokenizer_json());
  const auto ids = tokenizer->encode("hello</s><s>he", false);
  EXPECT_EQ(ids, (std::vector<TokenId>{259, kEosId, kBosId, 256}));
  EXPECT_EQ(tokenizer->decode(ids, false), "hello</s><s>he");
  EXPECT_EQ(tokenizer->decode(ids, true), "hellohe");
  EXPECT_TRUE(tokenizer->is_special_token(kEosId));
  EXPECT_FALSE(tokenizer->is_special_token(259));
}

TEST(Tokenizer, NeverDoubleBos) {
  TemporaryDirectory dir;
  const auto tokenizer = load(dir, tiny_tokenizer_json());
  EXPECT_EQ(tokenizer->encode("he", true), (std::vector<TokenId>{kBosId, 256}));
  EXPECT_EQ(tokenizer->encode("<s>he", true), (std::vector<TokenId>{kBosId, 256}));
}

TEST(Tokenizer, InvalidUtf8InputIsAnError) {
  TemporaryDirectory dir;
  const auto tokenizer = load(dir, tiny_tokenizer_json());
  EXPECT_THROW(tokenizer->encode("he\xFFllo", false), Error);
}

TEST(Tokenizer, LongRunsRoundTrip) {
  TemporaryDirectory dir;
  const auto tokenizer = load(dir, tiny_tokenizer_json());
  const std::string text = std::string(100000, ' ') + std::string(100000, 'l') + "x" +
                           std::string(50000, '7') + std::string(30000, '\n') + "hello";
  const auto ids = tokenizer->encode(text, false);
  EXPECT_EQ(tokenizer->decode(ids, false), text);
  EXPECT_EQ(ids.back(), 259);  // "hello"
}

TEST(Tokenizer, LongRunsRoundTripThroughSplitRegex) {
  auto json = tiny_tokenizer_json();
  const std::string llama3_pattern =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  json["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", llama3_pattern}}}, {"behavior", "Isolated"}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  TemporaryDirectory dir;
  const auto tokenizer = load(dir, json);
  const std::string text = std::string(100000, ' ') + std::string(100000, 'x') +
                           std::string(60000, '!') + std::string(50000, '\n') + " \t " +
                           std::string(30000, '9') + "hello";
  const auto ids = tokenizer->encode(text, false);
  EXPECT_EQ(tokenizer->decode(ids, false), text);
  EXPECT_EQ(ids.back(), 259);  // "hello"
}

TEST(Tokenizer, ReadsTokenizerConfig) {
  TemporaryDirectory dir;
  dir.write("tokenizer_config.json", R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>",
      "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  auto tokenizer = load(dir, tiny_tokenizer_json());
  EXPECT_EQ(tokenizer->bos_token(), "<s>");
  EXPECT_EQ(tokenizer->bos_token_id(), kBosId);
  EXPECT_EQ(tokenizer->eos_token_id(), kEosId);
  EXPECT_EQ(tokenizer->chat_template(), "D");
  dir.write("chat_template.jinja", "{{ messages }}");
  tokenizer = Tokenizer::from_directory(dir.path());
  EXPECT_EQ(tokenizer->chat_template(), "{{ messages }}");
}

TEST(Tokenizer, MalformedConfigIsAnError) {
  TemporaryDirectory dir;
  dir.write("tokenizer_config.json", R"({"bos_token": 5})");
  EXPECT_THROW(load(dir, tiny_tokenizer_json()), Error);
}

}  // namespace
}  // namespace mlx_cpp
