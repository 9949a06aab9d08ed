// Checked against mlx-lm: the arguments expected in SingleCall, Glm47WithoutNewlines,
// SchemaTypes, LiteralBackslashNBetweenKeyAndValue, MultiLineValue, NoArguments, ExtraWhitespace,
// TextBetweenPairsIsSkipped and the name-only and unclosed-value cases of
// MissingClosingTagAndTruncatedCalls are what mlx_lm.tool_parsers.glm47.parse_tool_call returns
// for the text between <tool_call> and </tool_call>, given the same tools. Differences: a value cut
// short by the end of the answer is kept as written (mlx-lm drops it), and mlx-lm's fallbacks for
// text that is not <arg_key> markup (a JSON object, "name a=1", anything else as {"raw": ...})
// are not followed: such text stays content (MalformedCallsStayContent).
#include <fstream>
#include <sstream>

#include "chat/tool_call_detection.h"
#include "chat/tool_call_format.h"
#include "format_check.h"
#include "template/chat_template.h"
#include "template_probe.h"

namespace mlx_cpp::chat {
namespace {

using testing::expect_call;
using testing::Message;
using testing::parse_checked;
using testing::read_test_template;
using testing::tool;
using Json = nlohmann::ordered_json;

const ToolCallFormat& glm45() {
  return tool_call_format("glm45");
}

ToolContext tools() {
  ToolContext context;
  context.tools = Json::array(
      {tool("get_weather", {{"city", {{"type", "string"}}}, {"days", {{"type", "integer"}}}}),
       tool("search", {{"query", {{"type", "string"}}},
                       {"limit", {{"type", "integer"}}},
                       {"filters", {{"type", "object"}}}}),
       tool("write_file", {{"path", {{"type", "string"}}}, {"content", {{"type", "string"}}}}),
       tool("get_time", nullptr)});
  return context;
}

Message parse(const std::string& text) {
  return parse_checked(glm45(), text, tools());
}

std::string weather_call(const std::string& city) {
  return "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>" + city +
         "</arg_value>\n</tool_call>";
}

TEST(Glm45Format, SingleCall) {
  auto message = parse(
      "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
      "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>");
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  expect_call(message, 0, "get_weather", R"({"city": "Paris", "days": 3})");
}

TEST(Glm45Format, Glm47WithoutNewlines) {
  auto message = parse(
      "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</"
      "arg_key><arg_value>3</arg_value></tool_call>");
  expect_call(message, 0, "get_weather", R"({"city": "Paris", "days": 3})");
}

TEST(Glm45Format, SchemaTypes) {
  // Declared strings stay as written (quotes included); the rest is JSON where it parses.
  auto message = parse(
      "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>42</arg_value>\n<arg_key>limit</"
      "arg_key>\n<arg_value> 5 </arg_value>\n<arg_key>filters</arg_key>\n<arg_value>{\"lang\": "
      "[\"en\", true]}</arg_value>\n<arg_key>flag</arg_key>\n<arg_value>true</arg_value>\n"
      "<arg_key>note</arg_key>\n<arg_value>null</arg_value>\n<arg_key>text</arg_key>\n"
      "<arg_value>hello world</arg_value>\n<arg_key>quoted</arg_key>\n<arg_value>\"x\"</"
      "arg_value>\n<arg_key>py</arg_key>\n<arg_value>True</arg_value>\n</tool_call>");
  expect_call(message, 0, "search",
              R"({"query": "42", "limit": 5, "filters": {"lang": ["en", true]}, "flag": true, )"
              R"("note": null, "text": "hello world", "quoted": "x", "py": true})");

  auto quoted_string = parse(
      "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>\"x\"</arg_value>\n"
      "</tool_call>");
  expect_call(quoted_string, 0, "search", R"({"query": "\"x\""})");
}

TEST(Glm45Format, LiteralBackslashNBetweenKeyAndValue) {
  auto message = parse(
      "<tool_call>get_weather\n<arg_key>city</arg_key>\\n<arg_value>Paris</arg_value>\\n"
      "</tool_call>");
  expect_call(message, 0, "get_weather", R"({"city": "Paris"})");
}

TEST(Glm45Format, MultiLineValue) {
  auto message = parse(
      "<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>a.py</arg_value>\n<arg_key>"
      "content</arg_key>\n<arg_value>\n\ndef f():\n    return \"<b>\"\n\n</arg_value>\n"
      "</tool_call>");
  expect_call(message, 0, "write_file",
              R"({"path": "a.py", "content": "def f():\n    return \"<b>\""})");
}

TEST(Glm45Format, NoArguments) {
  auto message = parse("<tool_call>get_time</tool_call>");
  expect_call(message, 0, "get_time", "{}");
  auto with_newline = parse("<tool_call>get_time\n</tool_call>");
  expect_call(with_newline, 0, "get_time", "{}");
}

TEST(Glm45Format, SeveralCallsWithTextBeforeAndAfter) {
  auto message =
      parse("Checking both.\n" + weather_call("Paris") + "\n" + weather_call("Oslo") + "\nDone.");
  EXPECT_EQ(message.content, "Checking both.Done.");
  ASSERT_EQ(message.calls.size(), 2u);
  expect_call(message, 0, "get_weather", R"({"city": "Paris"})");
  expect_call(message, 1, "get_weather", R"({"city": "Oslo"})");
}

TEST(Glm45Format, ExtraWhitespace) {
  auto message = parse(
      "Hi \n\n<tool_call>  get_weather  \n\n <arg_key> city </arg_key> \n\n <arg_value>  Paris  "
      "</arg_value>  \n\n </tool_call> \n Bye");
  EXPECT_EQ(message.content, "HiBye");
  expect_call(message, 0, "get_weather", R"({"city": "Paris"})");
}

TEST(Glm45Format, TextBetweenPairsIsSkipped) {
  auto message = parse(
      "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\nmore\n"
      "<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>");
  expect_call(message, 0, "get_weather", R"({"city": "Rome", "days": 2})");
}

TEST(Glm45Format, MissingClosingTagAndTruncatedCalls) {
  auto no_close =
      parse("<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n");
  expect_call(no_close, 0, "get_weather", R"({"city": "Paris"})");
  EXPECT_EQ(no_close.content, "");

  auto in_value = parse(
      "Sure.\n<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>a.py</arg_value>\n"
      "<arg_key>content</arg_key>\n<arg_value>print(1)</arg_v");
  EXPECT_EQ(in_value.content, "Sure.");
  expect_call(in_value, 0, "write_file", R"j({"path": "a.py", "content": "print(1)"})j");

  auto in_key = parse(
      "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</"
      "arg_value>\n<arg_key>da");
  expect_call(in_key, 0, "get_weather", R"({"city": "Paris"})");

  auto name_only = parse("<tool_call>get_time");
  expect_call(name_only, 0, "get_time", "{}");

  // </tool_call> before </arg_value>: the unclosed value is dropped, the call kept.
  auto unclosed_value =
      parse("<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</tool_call>\nok");
  expect_call(unclosed_value, 0, "get_weather", "{}");
  EXPECT_EQ(unclosed_value.content, "ok");
}

TEST(Glm45Format, MalformedCallsStayContent) {
  for (const std::string text : {
           "<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>",
           "<tool_call></tool_call>",
           "<tool_call>get weather now</tool_call>",
           "<tool_call>\n<arg_key>city</arg_key><arg_value>x</arg_value></tool_call>",
           "<tool_call>",
           "text <tool_ca",
           "a <tool_call>b is prose",
       }) {
    auto message = parse(text);
    EXPECT_TRUE(message.calls.empty()) << text;
    EXPECT_EQ(message.content, text);
  }
}

TEST(Glm45Format, OneCallWhenParallelCallsAreOff) {
  auto message = parse_checked(glm45(), weather_call("A") + weather_call("B"), tools(), 1);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, R"({"city": "A"})");
}

TEST(Glm45Format, RecognisesItsTemplatesRenderingsAndNoOther) {
  // glm_4_5's whitespace control leaves no newlines around the pairs (as jinja2 renders it too).
  const std::vector<std::pair<std::string, std::string>> templates = {
      {"glm_4_5.jinja",
       "<tool_call>get_weather<arg_key>city</arg_key>\n<arg_value>Paris</arg_value></tool_call>"},
      {"GLM-4.6.jinja",
       "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
       "</tool_call>"}};
  for (const auto& [name, call] : templates) {
    const std::string source = read_test_template(name);
    ASSERT_FALSE(source.empty()) << name;
    const std::string rendered = render_probe_call(ChatTemplate(source), Json::object());
    EXPECT_NE(rendered.find(call), std::string::npos) << name << ": " << rendered;
    EXPECT_TRUE(glm45().renders(rendered)) << name << ": " << rendered;
    EXPECT_TRUE(glm45().renders(source)) << name;
    // What the template writes parses back to the probe call.
    auto message = parse(rendered.substr(rendered.find("<tool_call>")));
    expect_call(message, 0, "get_weather", R"({"city": "Paris"})");
  }
  EXPECT_FALSE(glm45().renders(
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
      "</tool_call>"));
  EXPECT_FALSE(glm45().renders(
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
      "</tool_call>"));
}

}  // namespace
}  // namespace mlx_cpp::chat
