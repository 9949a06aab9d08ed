// Checked against mlx-lm's mistral parser (fed the text after the first
// [TOOL_CALLS], as its server does): the JSON list with and without an id,
// two calls in a list, [ARGS] calls repeated, spaces around [ARGS], a list
// element without arguments, and arguments as a JSON string all agree on
// names and arguments. Deliberate differences: with [CALL_ID] mlx-lm takes
// the id for the name (we take the name, and the id as the call's id); a
// call cut short is dropped by mlx-lm and kept as written here; text that
// is no call stays content rather than being dropped.
#include <cctype>
#include <fstream>
#include <sstream>

#include "chat/tool_call_detection.h"
#include "chat/tool_call_format.h"
#include "format_check.h"
#include "template_probe.h"

namespace mlx_cpp::chat {
namespace {

using testing::calls_close_at_end;
using testing::parse_checked;
using testing::probe_rendering;

const ToolCallFormat& mistral() {
  return tool_call_format("mistral");
}
const std::vector<std::string> kTools = {"get_weather", "search"};

bool is_nine_letters(const std::string& id) {
  if (id.size() != 9) return false;
  for (char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c))) return false;
  return true;
}

TEST(MistralFormat, JsonListWithOneCall) {
  auto message = parse_checked(mistral(),
                               "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                               "\"Paris\"}, \"id\": \"abcDEF123\"}]",
                               kTools);
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "get_weather");
  EXPECT_EQ(message.calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_TRUE(is_nine_letters(message.calls[0].id)) << message.calls[0].id;
}

TEST(MistralFormat, JsonListWithSeveralCallsAndTextBefore) {
  auto message = parse_checked(mistral(),
                               "I will look both up.\n[TOOL_CALLS] [{\"name\": \"search\", "
                               "\"arguments\": {\"q\": \"a]b\"}},\n {\"name\": \"get_weather\", "
                               "\"arguments\": {}}]",
                               kTools);
  EXPECT_EQ(message.content, "I will look both up.");
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"a]b\"}");
  EXPECT_EQ(message.calls[1].name, "get_weather");
  EXPECT_EQ(message.calls[1].arguments, "{}");
}

TEST(MistralFormat, ListElementWithoutArgumentsOrWithAStringOfJson) {
  auto message = parse_checked(mistral(),
                               "[TOOL_CALLS][{\"name\": \"search\"}, {\"name\": \"search\", "
                               "\"arguments\": \"{\\\"q\\\": 2}\"}]",
                               kTools);
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].arguments, "{}");
  EXPECT_EQ(message.calls[1].arguments, "{\"q\": 2}");
}

TEST(MistralFormat, NamedCallsRepeatTheToken) {
  auto message = parse_checked(mistral(),
                               "[TOOL_CALLS]search[ARGS]{\"q\": 1}[TOOL_CALLS]get_weather[ARGS]"
                               "{\"city\": \"Oslo\"}",
                               kTools);
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].name, "search");
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": 1}");
  EXPECT_EQ(message.calls[1].name, "get_weather");
  EXPECT_EQ(message.calls[1].arguments, "{\"city\": \"Oslo\"}");
}

TEST(MistralFormat, TheModelsCallIdIsKept) {
  auto message = parse_checked(
      mistral(), "[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{\"city\": \"Paris\"}", kTools);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "get_weather");
  EXPECT_EQ(message.calls[0].id, "abc123XYZ");
  EXPECT_EQ(message.calls[0].arguments, "{\"city\": \"Paris\"}");
}

TEST(MistralFormat, TextBeforeAndAfterTheCalls) {
  auto message = parse_checked(
      mistral(), "Checking.[TOOL_CALLS]search[ARGS]{\"q\": \"x\"}\n\nDone for now.", kTools);
  EXPECT_EQ(message.content, "Checking.Done for now.");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"x\"}");

  // A list element that is no call ends the calls; it and what follows are
  // content.
  auto list = parse_checked(
      mistral(), "[TOOL_CALLS][{\"name\": \"search\", \"arguments\": {}}, {\"x\": 1}]", kTools);
  ASSERT_EQ(list.calls.size(), 1u);
  EXPECT_EQ(list.content, ", {\"x\": 1}]");
}

TEST(MistralFormat, MalformedCallsStayContent) {
  for (const std::string text :
       {"[TOOL_CALLS]not a call", "[TOOL_CALLS]", "[TOOL_CALLS][{\"x\": 1}]",
        "[TOOL_CALLS][{\"name\": \"search\"", "[TOOL_CALLS]search", "[TOOL_CALLS]search[ARG",
        "[TOOL_CALLS]search{\"q\": 1}", "[TOOL_CALLS][not json]"}) {
    auto message = parse_checked(mistral(), text, kTools);
    EXPECT_TRUE(message.calls.empty()) << text;
    EXPECT_EQ(message.content, text);
  }
}

TEST(MistralFormat, TruncatedCallsAreKeptAsWritten) {
  auto named = parse_checked(mistral(), "[TOOL_CALLS]search[ARGS]{\"q\": \"unfini", kTools);
  ASSERT_EQ(named.calls.size(), 1u);
  EXPECT_EQ(named.calls[0].arguments, "{\"q\": \"unfini");

  auto bare = parse_checked(mistral(), "[TOOL_CALLS]search[ARGS]", kTools);
  ASSERT_EQ(bare.calls.size(), 1u);
  EXPECT_EQ(bare.calls[0].arguments, "{}");

  auto listed = parse_checked(
      mistral(), "[TOOL_CALLS][{\"name\": \"search\", \"arguments\": {\"q\": [1, 2", kTools);
  ASSERT_EQ(listed.calls.size(), 1u);
  EXPECT_EQ(listed.calls[0].arguments, "{\"q\": [1, 2");
  EXPECT_EQ(listed.content, "");
  EXPECT_TRUE(calls_close_at_end(
      mistral(), "[TOOL_CALLS][{\"name\": \"search\", \"arguments\": {\"q\": [1, 2"));
  EXPECT_TRUE(calls_close_at_end(mistral(), "[TOOL_CALLS]search[ARGS]{\"q\": \"unfini"));
}

TEST(MistralFormat, PartialMarkerAtTheEndIsContent) {
  auto message = parse_checked(mistral(), "Let me see [TOOL_CA", kTools);
  EXPECT_TRUE(message.calls.empty());
  EXPECT_EQ(message.content, "Let me see [TOOL_CA");
}

TEST(MistralFormat, ExtraWhitespace) {
  auto message =
      parse_checked(mistral(),
                    "  [TOOL_CALLS]  search [CALL_ID] abcDEF123 [ARGS] { \"q\" : 3 }  \n"
                    "[TOOL_CALLS]\n[ {\"name\" : \"get_weather\" ,\"arguments\":{ } } ]\n",
                    kTools);
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].id, "abcDEF123");
  EXPECT_EQ(message.calls[0].arguments, "{ \"q\" : 3 }");
  EXPECT_EQ(message.calls[1].arguments, "{ }");
}

TEST(MistralFormat, RendersMistralTemplatesOnly) {
  const std::string rendered =
      probe_rendering("mistralai-Mistral-Small-3.1-24B-Instruct-2503.jinja");
  EXPECT_NE(rendered.find("[TOOL_CALLS]"), std::string::npos) << rendered;
  EXPECT_TRUE(mistral().renders(rendered));
  // The newer templates' form.
  EXPECT_TRUE(mistral().renders("[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}</s>"));
  EXPECT_FALSE(
      mistral().renders("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                        "\"Paris\"}}\n</tool_call>"));
  EXPECT_FALSE(mistral().renders(
      "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|>"));
  EXPECT_FALSE(
      mistral().renders(probe_rendering("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja")));
}

TEST(MistralFormat, MarkersAndIds) {
  EXPECT_EQ(mistral().marker_tokens(),
            (std::vector<std::string>{"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"}));
  EXPECT_EQ(mistral().id_style(), CallIdStyle::nine_letters);
}

}  // namespace
}  // namespace mlx_cpp::chat
