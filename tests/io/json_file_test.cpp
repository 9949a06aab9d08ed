// JSON files: the nesting limit (its measure, and model files that exceed
// it), and strings that cannot be written.
#include "io/json_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/json_depth.h"

namespace mlx_cpp {
namespace {

TEST(JsonDepth, CountsArraysAndObjectsNotBracketsInStrings) {
  EXPECT_EQ(json_nesting_depth("1"), 0);
  EXPECT_EQ(json_nesting_depth("{\"a\": [1, {\"b\": []}]}"), 4);
  EXPECT_EQ(json_nesting_depth("[\"[[[[\", \"\\\"[[[\"]"), 1);
  EXPECT_EQ(json_nesting_depth("]]]][["), 2) << "stray closers do not go below zero";
}

TEST(JsonDepth, TheLimitIsInclusive) {
  EXPECT_NO_THROW(check_json_depth(std::string(kMaxJsonDepth, '['), "text"));
  try {
    check_json_depth(std::string(kMaxJsonDepth + 1, '['), "the body");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "the body nests deeper than 128 levels of arrays and objects");
  }
}

TEST(JsonDepth, ADeepModelFileIsAnErrorNamingIt) {
  // A tokenizer.json whose pre-tokenizer Sequence nests 20,000 deep.
  const auto path = std::filesystem::temp_directory_path() /
                    ("mlx_cpp_deep_" +
                     std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".json");
  {
    std::ofstream file(path);
    file << "{\"pre_tokenizer\": ";
    for (int i = 0; i < 20000; ++i) file << "{\"type\": \"Sequence\", \"pretokenizers\": [";
    for (int i = 0; i < 20000; ++i) file << "]}";
    file << "}";
  }
  try {
    read_json_file(path);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(path.string() + " nests deeper than 128"),
              std::string::npos)
        << error.what();
  }
  std::filesystem::remove(path);
}

TEST(JsonFile, AStringThatIsNotUtf8IsAnErrorNamingTheFile) {
  const auto path = std::filesystem::temp_directory_path() / "mlx_cpp_not_utf8.json";
  try {
    write_json_file(path, {{"name", "caf\xE9"}});  // Latin-1, as GGUF metadata may hold
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(path.string() + ": a string in it is not valid UTF-8"),
              std::string::npos)
        << error.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

// A number beyond a double's range is the file's error, not an escaped
// nlohmann exception (found by the tokenizer fuzzer).
TEST(JsonFile, ANumberOutOfRangeIsAnErrorNamingTheFile) {
  const auto path = std::filesystem::temp_directory_path() / "mlx_cpp_number_out_of_range.json";
  std::ofstream(path) << "{\"x\": 99e999}";
  try {
    read_json_file(path);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("malformed JSON in " + path.string()),
              std::string::npos)
        << error.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace mlx_cpp
