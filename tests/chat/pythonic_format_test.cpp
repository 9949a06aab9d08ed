// The arguments are checked against what mlx-lm's pythonic parser returns
// for the same list (the JSON it dumps, compared as values: it writes
// floats as Python prints them, e.g. -2500.0 for -2.5e3): see kMlxLm below.
// mlx-lm reads only what lies inside the wrapper; the bare list at the
// start of an answer (Llama 3.2 / 4) follows vLLM's pythonic parsers.
#include <fstream>
#include <sstream>

#include "chat/tool_call_detection.h"
#include "chat/tool_call_format.h"
#include "format_check.h"
#include "template_probe.h"

namespace mlx_cpp::chat {
namespace {

using testing::parse_checked;
using testing::probe_rendering;

const ToolCallFormat& pythonic() {
  return tool_call_format("pythonic");
}
const std::vector<std::string> kTools = {"get_weather", "search"};

void expect_same_json(const std::string& actual, const std::string& expected) {
  EXPECT_EQ(nlohmann::json::parse(actual), nlohmann::json::parse(expected)) << actual;
}

TEST(PythonicFormat, WrappedSingleCall) {
  auto message = parse_checked(
      pythonic(), "<|tool_call_start|>[get_weather(city='Paris')]<|tool_call_end|>", kTools);
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "get_weather");
  EXPECT_EQ(message.calls[0].arguments, "{\"city\": \"Paris\"}");
}

TEST(PythonicFormat, SeveralCallsWithTextAround) {
  auto message = parse_checked(pythonic(),
                               "Checking.\n<|tool_call_start|>[get_weather(city=\"Paris\"), "
                               "search(q='x', n=3)]<|tool_call_end|>\nBack soon.",
                               kTools);
  EXPECT_EQ(message.content, "Checking.Back soon.");
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(message.calls[1].name, "search");
  EXPECT_EQ(message.calls[1].arguments, "{\"q\": \"x\", \"n\": 3}");
}

// Each list, and the arguments mlx-lm returns for its calls.
struct MlxLmCase {
  std::string list;
  std::vector<std::string> arguments;
};
const std::vector<MlxLmCase> kMlxLm = {
    {"[search(q='it\\'s \"quoted\"\\n\\u00e9\\x41', n=-2.5e3, ok=True, none=None, l=[1, 'a', (2, "
     "3)], d={'k': {'n': [True, null]}, 1: false}, t=(1,))]",
     {"{\"q\": \"it's \\\"quoted\\\"\\néA\", \"n\": -2500.0, \"ok\": true, \"none\": null, \"l\": "
      "[1, \"a\", [2, 3]], \"d\": {\"k\": {\"n\": [true, null]}, \"1\": false}, \"t\": [1]}"}},
    {"[search(q='''tri'ple''', x=5., y=.5, z=0x1F, w=1_000)]",
     {"{\"q\": \"tri'ple\", \"x\": 5.0, \"y\": 0.5, \"z\": 31, \"w\": 1000}"}},
    {"[ns.tool(a=1,), search()]", {"{\"a\": 1}", "{}"}},
    {"[search(q=\"a\\\\d\"), search(q=\"\\d\")]", {"{\"q\": \"a\\\\d\"}", "{\"q\": \"\\\\d\"}"}},
};

TEST(PythonicFormat, PythonLiteralsAgreeWithMlxLm) {
  for (const auto& [list, arguments] : kMlxLm) {
    auto message =
        parse_checked(pythonic(), "<|tool_call_start|>" + list + "<|tool_call_end|>", kTools);
    EXPECT_EQ(message.content, "") << list;
    ASSERT_EQ(message.calls.size(), arguments.size()) << list;
    for (size_t i = 0; i < arguments.size(); ++i)
      expect_same_json(message.calls[i].arguments, arguments[i]);
  }
  auto names = parse_checked(pythonic(), "<|tool_call_start|>" + kMlxLm[2].list, kTools);
  ASSERT_EQ(names.calls.size(), 2u);
  EXPECT_EQ(names.calls[0].name, "ns.tool");
}

TEST(PythonicFormat, BareListAtTheStartNamingOfferedTools) {
  auto message = parse_checked(
      pythonic(), "  \n[get_weather(city='Oslo'),\n search(q=\"mlx\")]\nWill do.", kTools);
  EXPECT_EQ(message.content, "Will do.");
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].arguments, "{\"city\": \"Oslo\"}");
  EXPECT_EQ(message.calls[1].arguments, "{\"q\": \"mlx\"}");

  // Not at the start, or naming no offered tool: prose.
  for (const std::string text :
       {"See [get_weather(city='Oslo')]", "[rm_rf(path='/')]", "[1] a footnote",
        "[a link](https://example.com)", "[get_weather is a tool]", "[]"}) {
    auto prose = parse_checked(pythonic(), text, kTools);
    EXPECT_TRUE(prose.calls.empty()) << text;
    EXPECT_EQ(prose.content, text);
  }
}

TEST(PythonicFormat, Llama4PythonMarkers) {
  auto message =
      parse_checked(pythonic(), "<|python_start|>[search(q='x')]<|python_end|>Then more.", kTools);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"x\"}");
  EXPECT_EQ(message.content, "Then more.");
}

TEST(PythonicFormat, WrappedCallsNeedNoOfferedName) {
  auto message = parse_checked(
      pythonic(), "<|tool_call_start|> [ lookup ( id = 7 ) ] <|tool_call_end|>", kTools);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "lookup");
  EXPECT_EQ(message.calls[0].arguments, "{\"id\": 7}");
}

TEST(PythonicFormat, TruncatedListKeepsTheCallsThatEnded) {
  auto message =
      parse_checked(pythonic(), "<|tool_call_start|>[search(q='a'), get_weather(city='Par", kTools);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"a\"}");
  EXPECT_EQ(message.content, "get_weather(city='Par");

  const std::string cut = "<|tool_call_start|>[search(q='a'";
  auto none = parse_checked(pythonic(), cut, kTools);
  EXPECT_TRUE(none.calls.empty());
  EXPECT_EQ(none.content, cut);
}

TEST(PythonicFormat, MalformedCallsStayContent) {
  for (const std::string text : {
           "<|tool_call_start|>get_weather(city='Paris')<|tool_call_end|>",
           "<|tool_call_start|>[get_weather('Paris')]<|tool_call_end|>",
           "<|tool_call_start|>[search(q=x)]<|tool_call_end|>",
           "<|tool_call_start|>[search(q='a', q='b')]<|tool_call_end|>",
           "<|tool_call_start|>[search(q='line\nbreak')]<|tool_call_end|>",
           "<|tool_call_start|>[{\"name\": \"search\", \"arguments\": {}}]<|tool_call_end|>",
           "text <|tool_call_st",
       }) {
    auto message = parse_checked(pythonic(), text, kTools);
    EXPECT_TRUE(message.calls.empty()) << text;
    EXPECT_EQ(message.content, text);
  }
}

TEST(PythonicFormat, WhatFollowsABrokenCallIsContent) {
  auto message = parse_checked(pythonic(),
                               "<|tool_call_start|>[search(q='a'), oops]<|tool_call_end|>", kTools);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.content, "oops]<|tool_call_end|>");

  auto partial_end = parse_checked(pythonic(), "<|tool_call_start|>[search()]<|tool_ca", kTools);
  ASSERT_EQ(partial_end.calls.size(), 1u);
  EXPECT_EQ(partial_end.content, "<|tool_ca");
}

TEST(PythonicFormat, RendersItsTemplatesCallsOnly) {
  const std::string rendered = probe_rendering("LFM2.5-8B-A1B.jinja");
  ASSERT_NE(rendered.find("[get_weather(city='Paris')]"), std::string::npos) << rendered;
  EXPECT_TRUE(pythonic().renders(rendered));
  EXPECT_EQ(detect_tool_call_format(rendered, "")->name(), "pythonic");
  // llama.cpp's LFM2 template and Phi-4-mini's write JSON calls instead.
  EXPECT_FALSE(pythonic().renders(probe_rendering("llama-cpp-lfm2.jinja")));
  EXPECT_FALSE(
      pythonic().renders(probe_rendering("llama-cpp-microsoft-Phi-4-mini-instruct.jinja")));
  EXPECT_FALSE(
      pythonic().renders("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                         "\"Paris\"}}\n</tool_call>"));
  EXPECT_FALSE(
      pythonic().renders("<|tool_calls_section_begin|><|tool_call_begin|>abcDEF123<|tool_call_"
                         "argument_begin|>{\"city\":"
                         " \"Paris\"}<|tool_call_end|><|tool_calls_section_end|>"));
  EXPECT_FALSE(pythonic().renders(
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": "
      "\"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"));
}

}  // namespace
}  // namespace mlx_cpp::chat
