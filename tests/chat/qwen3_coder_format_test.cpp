// Checked against mlx-lm: the arguments expected in SingleTypedCall, MultiLineCode, SchemaTypes,
// UntypedAndNullValues, NoParameters and TextBetweenParametersIsSkipped are what
// mlx_lm.tool_parsers.qwen3_coder.parse_tool_call returns for the text between <tool_call> and
// </tool_call>, given the same tools; so is ExtraWhitespace's once the space after </function> is
// one newline (mlx-lm wants </function> at the very end). Where mlx-lm drops the call (no
// </function>, an integer that is not one) this format keeps it; where it merges several
// <function=> blocks of one <tool_call> into the first, they are separate calls here; a value cut
// short by the end of the answer is kept as written.
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

const ToolCallFormat& qwen3_coder() {
  return tool_call_format("qwen3_coder");
}

ToolContext tools() {
  ToolContext context;
  context.tools = Json::array(
      {tool("get_weather", {{"city", {{"type", "string"}}}, {"days", {{"type", "integer"}}}}),
       tool("search", {{"query", {{"type", "string"}}},
                       {"limit", {{"type", "number"}}},
                       {"exact", {{"type", "boolean"}}},
                       {"filters", {{"type", "object"}}},
                       {"tags", {{"type", "array"}}},
                       {"extra", {{"description", "untyped"}}},
                       {"page", {{"type", "integer"}}},
                       {"any", {{"type", "any"}}}}),
       tool("write_file", {{"path", {{"type", "string"}}}, {"content", {{"type", "string"}}}}),
       tool("get_time", nullptr)});
  return context;
}

Message parse(const std::string& text) {
  return parse_checked(qwen3_coder(), text, tools());
}

std::string weather_call(const std::string& city) {
  return "<tool_call>\n<function=get_weather>\n<parameter=city>\n" + city +
         "\n</parameter>\n</function>\n</tool_call>";
}

TEST(Qwen3CoderFormat, SingleTypedCall) {
  auto message = parse(
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>");
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  expect_call(message, 0, "get_weather", R"({"city": "Paris", "days": 3})");
}

TEST(Qwen3CoderFormat, MultiLineCode) {
  // One leading and one trailing newline belong to the markup; the rest is the value's.
  auto message = parse(
      "<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/a.py\n</parameter>\n"
      "<parameter=content>\n\ndef f(x):\n    if x < 1:\n        return \"<none>\"\n\n    return "
      "x\n\n</parameter>\n</function>\n</tool_call>");
  expect_call(message, 0, "write_file",
              R"({"path": "src/a.py", "content": "\ndef f(x):\n    if x < 1:\n        return )"
              R"(\"<none>\"\n\n    return x\n"})");
}

TEST(Qwen3CoderFormat, SchemaTypes) {
  auto message = parse(
      "<tool_call>\n<function=search>\n<parameter=query>\n42\n</parameter>\n<parameter=limit>\n2."
      "5\n</parameter>\n<parameter=page>\n4.0\n</parameter>\n<parameter=exact>\nTrue\n</"
      "parameter>\n<parameter=filters>\n{\"lang\": [\"en\", \"fr\"]}\n</parameter>\n<parameter="
      "tags>\n[\"a\", \"b\"]\n</parameter>\n<parameter=extra>\n{\"k\": 1}\n</parameter>\n"
      "<parameter=any>\n[1, 2]\n</parameter>\n<parameter=other>\n7\n</parameter>\n</function>\n"
      "</tool_call>");
  expect_call(message, 0, "search",
              R"({"query": "42", "limit": 2.5, "page": 4, "exact": true, )"
              R"("filters": {"lang": ["en", "fr"]}, "tags": ["a", "b"], "extra": {"k": 1}, )"
              R"("any": [1, 2], "other": "7"})");
}

TEST(Qwen3CoderFormat, UntypedAndNullValues) {
  auto message = parse(
      "<tool_call>\n<function=search>\n<parameter=extra>\nplain words\n</parameter>\n"
      "<parameter=query>\nNULL\n</parameter>\n<parameter=limit>\n10\n</parameter>\n"
      "<parameter=any>\nsome text\n</parameter>\n</function>\n</tool_call>");
  expect_call(message, 0, "search",
              R"({"extra": "plain words", "query": null, "limit": 10, "any": "some text"})");
}

TEST(Qwen3CoderFormat, NoParameters) {
  auto message = parse("<tool_call>\n<function=get_time>\n</function>\n</tool_call>");
  expect_call(message, 0, "get_time", "{}");
}

TEST(Qwen3CoderFormat, IntegerThatIsNotOneStaysText) {
  // mlx-lm drops the whole call here; the value is kept as written instead.
  auto message = parse(
      "<tool_call>\n<function=get_weather>\n<parameter=days>\n2.5\n</parameter>\n</function>\n"
      "</tool_call>");
  expect_call(message, 0, "get_weather", R"({"days": "2.5"})");
}

TEST(Qwen3CoderFormat, SeveralCallsWithTextBeforeAndAfter) {
  auto message = parse("I'll check both.\n\n" + weather_call("Paris") + "\n" +
                       weather_call("Oslo") + "\nDone.");
  EXPECT_EQ(message.content, "I'll check both.Done.");
  ASSERT_EQ(message.calls.size(), 2u);
  expect_call(message, 0, "get_weather", R"({"city": "Paris"})");
  expect_call(message, 1, "get_weather", R"({"city": "Oslo"})");
}

TEST(Qwen3CoderFormat, SeveralFunctionsInOneWrapper) {
  // The second </function> is missing: the next <function= ends the call before it.
  auto message = parse(
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>\n"
      "<function=get_time>\n<function=get_weather>\n<parameter=days>\n1\n</parameter>\n"
      "</function>\n</tool_call>");
  ASSERT_EQ(message.calls.size(), 3u);
  expect_call(message, 0, "get_weather", R"({"city": "Rome"})");
  expect_call(message, 1, "get_time", "{}");
  expect_call(message, 2, "get_weather", R"({"days": 1})");
  EXPECT_EQ(message.content, "");
}

TEST(Qwen3CoderFormat, MissingClosingTagsAtTheEnd) {
  auto no_wrapper_close = parse(
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n");
  expect_call(no_wrapper_close, 0, "get_weather", R"({"city": "Paris"})");
  EXPECT_EQ(no_wrapper_close.content, "");

  auto no_function_close =
      parse("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n");
  expect_call(no_function_close, 0, "get_weather", R"({"city": "Paris"})");
  EXPECT_EQ(no_function_close.content, "");

  // </tool_call> closes a call whose </function> never came; text after it is content.
  auto closed_by_wrapper = parse(
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</tool_call>"
      "\nok");
  expect_call(closed_by_wrapper, 0, "get_weather", R"({"city": "Paris"})");
  EXPECT_EQ(closed_by_wrapper.content, "ok");
}

TEST(Qwen3CoderFormat, TruncatedCallKeepsWhatWasWritten) {
  auto in_value = parse(
      "<tool_call>\n<function=write_file>\n<parameter=path>\na.py\n</parameter>\n"
      "<parameter=content>\nprint(1)\n</param");
  expect_call(in_value, 0, "write_file", R"j({"path": "a.py", "content": "print(1)"})j");
  EXPECT_EQ(in_value.content, "");

  auto in_parameter_name = parse(
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<para"
      "meter=da");
  expect_call(in_parameter_name, 0, "get_weather", R"({"city": "Paris"})");

  auto right_after_name = parse("Sure.\n<tool_call>\n<function=get_time>\n");
  EXPECT_EQ(right_after_name.content, "Sure.");
  expect_call(right_after_name, 0, "get_time", "{}");
}

TEST(Qwen3CoderFormat, CallWithoutWrapperMustNameAnOfferedTool) {
  auto bare = parse(
      "Checking.\n<function=get_weather>\n<parameter=city>\nLima\n</parameter>\n</function>\n"
      "</tool_call>\nThat is all.");
  EXPECT_EQ(bare.content, "Checking.That is all.");
  expect_call(bare, 0, "get_weather", R"({"city": "Lima"})");

  // A missing </function> is forgiven here too; a call of no offered tool ends the calls.
  auto two = parse(
      "<function=get_weather>\n<parameter=city>\nA\n</parameter>\n<function=get_time>\n"
      "</function>\n<function=rm_rf>\n</function>");
  ASSERT_EQ(two.calls.size(), 2u);
  expect_call(two, 0, "get_weather", R"({"city": "A"})");
  expect_call(two, 1, "get_time", "{}");
  EXPECT_EQ(two.content, "<function=rm_rf>\n</function>");

  const std::string unknown =
      "Write <function=rm_rf>\n<parameter=path>\n/\n</parameter>\n</function> like this";
  auto prose = parse(unknown);
  EXPECT_TRUE(prose.calls.empty());
  EXPECT_EQ(prose.content, unknown);
}

TEST(Qwen3CoderFormat, TextBetweenParametersIsSkipped) {
  auto message = parse(
      "<tool_call>\n<function=get_weather>\nnoise<parameter=city>\nRome\n</parameter>\nmore "
      "noise\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>");
  expect_call(message, 0, "get_weather", R"({"city": "Rome", "days": 2})");
}

TEST(Qwen3CoderFormat, ExtraWhitespace) {
  auto message = parse(
      "Hi  \n\n  <tool_call>  \n\n <function= get_weather >\n\n<parameter=city>Paris</parameter>"
      "\n\n</function>  \n </tool_call>  \n\n  Bye");
  EXPECT_EQ(message.content, "HiBye");
  expect_call(message, 0, "get_weather", R"({"city": "Paris"})");
}

TEST(Qwen3CoderFormat, MalformedCallsStayContent) {
  for (const std::string text : {
           "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>",
           "<tool_call>\n<function=>\n</function>\n</tool_call>",
           "<tool_call>\n<function=get weather>\n</function>\n</tool_call>",
           "<tool_call>\n<function=get_wea",
           "<tool_call>\n<func",
           "text <tool_ca",
           "text <function=get_weath",
           "a < b and c <function=x",
       }) {
    auto message = parse(text);
    EXPECT_TRUE(message.calls.empty()) << text;
    EXPECT_EQ(message.content, text);
  }
}

TEST(Qwen3CoderFormat, OneCallWhenParallelCallsAreOff) {
  auto message =
      parse_checked(qwen3_coder(), weather_call("A") + weather_call("B"), tools(), /*max_calls=*/1);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, R"({"city": "A"})");
}

TEST(Qwen3CoderFormat, RecognisesItsTemplatesRenderingAndNoOther) {
  // StepFun 3.7 writes calls as Qwen3-Coder does.
  const std::string source = read_test_template("StepFun3.7-Flash.jinja");
  ASSERT_FALSE(source.empty());
  const std::string rendered =
      render_probe_call(ChatTemplate(source), {{"bos_token", ""}, {"eos_token", ""}});
  EXPECT_NE(rendered.find("<function=get_weather>"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("<parameter=city>"), std::string::npos) << rendered;
  EXPECT_TRUE(qwen3_coder().renders(rendered)) << rendered;
  EXPECT_TRUE(qwen3_coder().renders(source));  // its system prompt's example
  // Qwen3-Coder's own template, as its source spells the call.
  EXPECT_TRUE(qwen3_coder().renders(
      "{{- '<tool_call>\\n<function=' + tool_call.name + '>\\n' }}{{- '<parameter=' + name }}"));

  EXPECT_FALSE(qwen3_coder().renders(
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
      "</tool_call>"));
  EXPECT_FALSE(qwen3_coder().renders(
      "\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
      "</tool_call>"));
  EXPECT_FALSE(qwen3_coder().renders(
      "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>\n"
      "</seed:tool_call>"));
  EXPECT_FALSE(qwen3_coder().renders(
      "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris"
      "</parameter>\n</invoke>\n</minimax:tool_call>"));
}

}  // namespace
}  // namespace mlx_cpp::chat
