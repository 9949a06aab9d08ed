// UTF-8 repair and NFC against facts from the Unicode standard.
#include <gtest/gtest.h>

#include "tokenizer/unicode_text.h"
#include "tokenizer/utf8.h"

namespace mlx_cpp {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

TEST(TokenizerUtf8, RepairReplacesMaximalInvalidSubparts) {
  EXPECT_EQ(utf8::repair_lossy("a\xF0\x9F"
                               "b"),
            "a" + kReplacement + "b");                                     // truncated 4-byte
  EXPECT_EQ(utf8::repair_lossy("\xE0\x80"), kReplacement + kReplacement);  // overlong lead
  EXPECT_EQ(utf8::repair_lossy("\xED\xA0\x80"), kReplacement + kReplacement + kReplacement);
  EXPECT_EQ(utf8::repair_lossy("\xC3\xA9"), "\xC3\xA9");
}

TEST(TokenizerUtf8, CompletePrefixHoldsBackTruncatedCharacter) {
  EXPECT_EQ(utf8::complete_prefix_length("ab\xE4\xBD"), 2u);
  EXPECT_EQ(utf8::complete_prefix_length("ab\xE4\xBD\xA0"), 5u);
  EXPECT_EQ(utf8::complete_prefix_length("ab\x80"), 3u);  // invalid, never completes
}

TEST(TokenizerNfc, ComposesAndReorders) {
  EXPECT_EQ(unicode::nfc("e\xCC\x81"), "\xC3\xA9");  // e + acute -> é
  EXPECT_EQ(unicode::nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // jamo -> 각
  EXPECT_EQ(unicode::nfc("\xE2\x84\xAB"), "\xC3\x85");  // Angstrom sign -> Å
  // q + dot below (220) + dot above (230) stays; the reverse order is sorted.
  EXPECT_EQ(unicode::nfc("q\xCC\x87\xCC\xA3"), "q\xCC\xA3\xCC\x87");
  EXPECT_EQ(unicode::nfc("plain ascii"), "plain ascii");
}

}  // namespace
}  // namespace mlx_cpp
