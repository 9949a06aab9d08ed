// The streaming detokenizer holds back partial characters and ends with the
// full decode.
#include <gtest/gtest.h>
#include <unistd.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_files.h"

namespace mlx_cpp {
namespace {

using testing::kBosId;
using testing::kEosId;

TEST(StreamingDetokenizer, HoldsBackIncompleteCharacters) {
  testing::TemporaryDirectory dir;
  dir.write("tokenizer.json", testing::tiny_tokenizer_json().dump());
  const auto tokenizer = Tokenizer::from_directory(dir.path());
  // "你" is three bytes, so three byte tokens in this vocabulary.
  const auto ids = tokenizer->encode("he\xE4\xBD\xA0!", true);
  ASSERT_EQ(ids.size(), 6u);  // <s> he 3 bytes !
  StreamingDetokenizer stream(*tokenizer);
  std::vector<std::string> pieces;
  for (TokenId id : ids) pieces.push_back(stream.add(id));
  EXPECT_EQ(pieces, (std::vector<std::string>{"", "he", "", "", "\xE4\xBD\xA0", "!"}));
  EXPECT_EQ(stream.finish(), "");
}

TEST(StreamingDetokenizer, FinishFlushesAndResetStartsOver) {
  testing::TemporaryDirectory dir;
  dir.write("tokenizer.json", testing::tiny_tokenizer_json().dump());
  const auto tokenizer = Tokenizer::from_directory(dir.path());
  StreamingDetokenizer stream(*tokenizer);
  // Byte tokens have the byte's value as id here: end on two bytes of "你".
  auto ids = tokenizer->encode("hello ", false);
  ids.insert(ids.end(), {0xE4, 0xBD});
  std::string text;
  for (TokenId id : ids) text += stream.add(id);
  EXPECT_EQ(text, "hello ");
  const std::string rest = stream.finish();
  EXPECT_EQ(rest, "\xEF\xBF\xBD");  // one U+FFFD for the truncated character
  EXPECT_EQ(text + rest, tokenizer->decode(ids, true));
  stream.reset();
  EXPECT_EQ(stream.add(kBosId), "");
  EXPECT_EQ(stream.add(259), "hello");
  EXPECT_EQ(stream.add(kEosId), "");
  EXPECT_EQ(stream.finish(), "");
}

}  // namespace
}  // namespace mlx_cpp
