// Every golden string must encode to the oracle's ids (with and without
// special tokens), decode to the oracle's text, and stream-decode to the same
// text with valid UTF-8 at every step. The goldens list the tokenizers to
// check (tools/oracle/tokenizer_goldens.py), so a new model directory is one
// more --model-dir argument.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "io/json_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace mlx_cpp {
namespace {

const std::filesystem::path kGoldens = std::filesystem::path(MLX_CPP_GOLDENS) / "tokenizer";

struct GoldenSet {
  std::string name;
  std::unique_ptr<Tokenizer> tokenizer;
  nlohmann::json cases;
  std::string long_text;
  std::vector<TokenId> long_ids;
};

std::vector<GoldenSet> load_golden_sets() {
  std::vector<GoldenSet> sets;
  for (const auto& entry : read_json_file(kGoldens / "index.json")) {
    auto goldens = read_json_file(kGoldens / entry["cases"].get<std::string>());
    sets.push_back({entry["name"].get<std::string>(),
                    Tokenizer::from_directory(entry["dir"].get<std::string>()),
                    std::move(goldens["cases"]), goldens["long_text"].get<std::string>(),
                    goldens["long_ids"].get<std::vector<TokenId>>()});
  }
  return sets;
}

const std::vector<GoldenSet>& golden_sets() {
  static const std::vector<GoldenSet> sets = load_golden_sets();
  return sets;
}

std::string show_ids(const std::vector<TokenId>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ' ';
    out += std::to_string(ids[i]);
  }
  return out + "]";
}

// Runs check on every case of every set; reports the mismatch count per set
// and the first few mismatches in full.
template <typename Check>
void for_all_cases(const char* what, Check check) {
  ASSERT_FALSE(golden_sets().empty());
  for (const auto& set : golden_sets()) {
    size_t mismatches = 0;
    for (const auto& golden : set.cases) {
      const std::string problem = check(*set.tokenizer, golden);
      if (problem.empty()) continue;
      if (++mismatches <= 3) {
        ADD_FAILURE() << set.name << " " << what << " mismatch for text "
                      << nlohmann::json(golden["text"]).dump() << ": " << problem;
      }
    }
    std::cout << "[tokenizer parity] " << set.name << " " << what << ": " << set.cases.size()
              << " strings, " << mismatches << " mismatches\n";
    EXPECT_EQ(mismatches, 0u) << set.name << " " << what;
  }
}

std::string compare_ids(const std::vector<TokenId>& actual, const nlohmann::json& expected) {
  const auto wanted = expected.get<std::vector<TokenId>>();
  return actual == wanted ? ""
                          : std::string("got ")
                                .append(show_ids(actual))
                                .append(" want ")
                                .append(show_ids(wanted));
}

TEST(TokenizerParity, EncodeWithoutSpecialTokens) {
  for_all_cases("encode", [](const Tokenizer& tokenizer, const nlohmann::json& golden) {
    return compare_ids(tokenizer.encode(golden["text"].get<std::string>(), false), golden["ids"]);
  });
}

TEST(TokenizerParity, EncodeWithSpecialTokens) {
  for_all_cases("encode+special", [](const Tokenizer& tokenizer, const nlohmann::json& golden) {
    return compare_ids(tokenizer.encode(golden["text"].get<std::string>(), true),
                       golden["ids_special"]);
  });
}

TEST(TokenizerParity, Decode) {
  for_all_cases("decode", [](const Tokenizer& tokenizer, const nlohmann::json& golden) {
    const auto ids = golden["ids_special"].get<std::vector<TokenId>>();
    const std::string skip = tokenizer.decode(ids, true);
    const std::string keep = tokenizer.decode(ids, false);
    if (skip != golden["decoded"])
      return std::string("skip-special got ").append(nlohmann::json(skip).dump());
    if (keep != golden["decoded_keep"])
      return std::string("keep-special got ").append(nlohmann::json(keep).dump());
    return std::string();
  });
}

TEST(TokenizerParity, StreamingEqualsDecode) {
  for_all_cases("streaming", [](const Tokenizer& tokenizer, const nlohmann::json& golden) {
    StreamingDetokenizer stream(tokenizer);
    std::string text;
    for (TokenId id : golden["ids_special"].get<std::vector<TokenId>>()) {
      const std::string piece = stream.add(id);
      if (!utf8::is_valid(piece))
        return std::string("invalid UTF-8 piece after ").append(std::to_string(text.size()));
      text += piece;
    }
    const std::string rest = stream.finish();
    if (!utf8::is_valid(rest)) return std::string("invalid UTF-8 in finish()");
    text += rest;
    const std::string expected = golden["decoded"].get<std::string>();
    return text == expected ? std::string()
                            : std::string("streamed ").append(nlohmann::json(text).dump());
  });
}

// Information only: encode throughput on all strings joined, first with an
// empty piece cache and then warm (the ids must still match the oracle's).
TEST(TokenizerParity, LongTextSpeed) {
  for (const auto& set : golden_sets()) {
    for (const char* pass : {"cold", "warm"}) {
      const auto start = std::chrono::steady_clock::now();
      const auto ids = set.tokenizer->encode(set.long_text, false);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::cout << "[tokenizer speed] " << set.name << " (" << pass << "): " << ids.size()
                << " tokens from " << set.long_text.size() << " bytes in " << seconds * 1e3
                << " ms (" << static_cast<long>(ids.size() / std::max(seconds, 1e-9))
                << " tokens/s)\n";
      EXPECT_EQ(ids, set.long_ids) << set.name << " long text";
    }
  }
}

}  // namespace
}  // namespace mlx_cpp
