// Chat answers parsed through the HTTP layer: reasoning_content, tool_calls
// and finish_reason "tool_calls", whole and streamed (the stream's deltas
// add up to the whole answer and never carry markup), and the request
// fields that steer them (tools, tool_choice, parallel_tool_calls,
// reasoning_effort), with 400s that say what to fix.
#include <gtest/gtest.h>

#include "agent_scripts.h"
#include "server_fixture.h"

namespace mlx_cpp::server::testing {
namespace {

Json weather_tools() {
  return Json::array(
      {{{"type", "function"},
        {"function",
         {{"name", "get_weather"},
          {"parameters",
           {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}}}});
}

Json ask_weather(Json extra = Json::object()) {
  extra["tools"] = weather_tools();
  return chat_body("Weather in Paris?", std::move(extra));
}

// The message a stream adds up to, checking each delta on the way.
Json reassemble(const std::vector<Json>& events) {
  Json message = {{"content", ""}, {"reasoning_content", ""}, {"tool_calls", Json::array()}};
  for (const auto& event : events) {
    if (!event.is_object() || event["choices"].empty()) continue;
    const auto& delta = event["choices"][0]["delta"];
    if (delta.contains("content") && delta["content"].is_string()) {
      EXPECT_EQ(delta["content"].get<std::string>().find("<tool_call>"), std::string::npos);
      EXPECT_EQ(delta["content"].get<std::string>().find("<think>"), std::string::npos);
      message["content"] =
          message["content"].get<std::string>() + delta["content"].get<std::string>();
    }
    if (delta.contains("reasoning_content"))
      message["reasoning_content"] = message["reasoning_content"].get<std::string>() +
                                     delta["reasoning_content"].get<std::string>();
    if (!delta.contains("tool_calls")) continue;
    for (const auto& call : delta["tool_calls"]) {
      const size_t index = call["index"];
      auto& calls = message["tool_calls"];
      if (index == calls.size()) {
        EXPECT_TRUE(call.contains("id") && call["function"].contains("name")) << call.dump();
        calls.push_back({{"id", call["id"]},
                         {"type", call["type"]},
                         {"function", {{"name", call["function"]["name"]}, {"arguments", ""}}}});
      }
      auto& arguments = calls[index]["function"]["arguments"];
      arguments = arguments.get<std::string>() + call["function"]["arguments"].get<std::string>();
    }
  }
  return message;
}

TEST(HttpToolCalls, WholeAnswerSplitsReasoningContentAndCalls) {
  ServerFixture server(hermes_thinker(kThinkingCall));
  auto result = server.post("/v1/chat/completions", ask_weather());
  ASSERT_EQ(result->status, 200) << result->body;
  auto body = Json::parse(result->body);
  const auto& message = body["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "The user wants weather.");
  EXPECT_EQ(message["content"], "Let me look.");
  ASSERT_EQ(message["tool_calls"].size(), 1u);
  const auto& call = message["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(Json::parse(call["function"]["arguments"].get<std::string>()),
            Json({{"city", "Paris"}}));
  EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls");
  // The fake encodes a byte per token: the reasoning's bytes.
  EXPECT_EQ(body["usage"]["completion_tokens_details"]["reasoning_tokens"],
            std::string("The user wants weather.").size());
  // The tools reached the template.
  EXPECT_EQ(server.backend().last_render()["tools"], weather_tools());
}

TEST(HttpToolCalls, StreamAddsUpToTheWholeAnswer) {
  ServerFixture server(hermes_thinker(kThinkingCall));
  auto whole = Json::parse(server.post("/v1/chat/completions", ask_weather())->body);
  auto result = server.post("/v1/chat/completions", ask_weather({{"stream", true}}));
  ASSERT_EQ(result->status, 200);
  auto events = sse_payloads(result->body);
  auto streamed = reassemble(events);
  const auto& expected = whole["choices"][0]["message"];
  EXPECT_EQ(streamed["content"], expected["content"]);
  EXPECT_EQ(streamed["reasoning_content"], expected["reasoning_content"]);
  ASSERT_EQ(streamed["tool_calls"].size(), 1u);
  EXPECT_EQ(streamed["tool_calls"][0]["function"], expected["tool_calls"][0]["function"]);
  EXPECT_EQ(events[events.size() - 2]["choices"][0]["finish_reason"], "tool_calls");
}

TEST(HttpToolCalls, WithoutToolsTheMarkupIsContent) {
  ServerFixture server(hermes_thinker(kThinkingCall));
  auto body = Json::parse(server.post("/v1/chat/completions", chat_body("hi"))->body);
  const auto& message = body["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "The user wants weather.");
  EXPECT_FALSE(message.contains("tool_calls"));
  EXPECT_NE(message["content"].get<std::string>().find("<tool_call>"), std::string::npos);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
}

TEST(HttpToolCalls, ToolChoiceNoneKeepsToolsFromTheTemplate) {
  ServerFixture server(hermes_thinker(kThinkingCall));
  auto body = Json::parse(
      server.post("/v1/chat/completions", ask_weather({{"tool_choice", "none"}}))->body);
  EXPECT_TRUE(server.backend().last_render()["tools"].is_null());
  EXPECT_FALSE(body["choices"][0]["message"].contains("tool_calls"));
}

TEST(HttpToolCalls, ParallelToolCallsFalseKeepsTheFirstCall) {
  const std::string two =
      "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>"
      "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}</tool_call>";
  ServerFixture server(hermes_thinker(two));
  auto both = Json::parse(server.post("/v1/chat/completions", ask_weather())->body);
  EXPECT_EQ(both["choices"][0]["message"]["tool_calls"].size(), 2u);
  auto one = Json::parse(
      server.post("/v1/chat/completions", ask_weather({{"parallel_tool_calls", false}}))->body);
  ASSERT_EQ(one["choices"][0]["message"]["tool_calls"].size(), 1u);
  EXPECT_NE(one["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
                .get<std::string>()
                .find("Oslo"),
            std::string::npos);
}

TEST(HttpToolCalls, ReasoningFormatNoneLeavesTheBlockInContent) {
  ServerConfig config;
  config.parse_reasoning = false;
  ServerFixture server(hermes_thinker("<think>hm</think>Hi."), config);
  auto body = Json::parse(server.post("/v1/chat/completions", chat_body("hi"))->body);
  EXPECT_EQ(body["choices"][0]["message"]["content"], "<think>hm</think>Hi.");
  EXPECT_FALSE(body["choices"][0]["message"].contains("reasoning_content"));
}

TEST(HttpToolCalls, ReasoningEffortReachesTheTemplate) {
  ServerFixture server(hermes_thinker("Hi."));
  server.post("/v1/chat/completions", chat_body("hi", {{"reasoning_effort", "none"}}));
  auto kwargs = server.backend().last_render()["kwargs"];
  EXPECT_EQ(kwargs["enable_thinking"], false);
  EXPECT_EQ(kwargs["reasoning_effort"], "none");
  server.post("/v1/chat/completions",
              chat_body("hi", {{"reasoning_effort", "high"},
                               {"chat_template_kwargs", {{"enable_thinking", false}}}}));
  kwargs = server.backend().last_render()["kwargs"];
  EXPECT_EQ(kwargs["enable_thinking"], false);  // chat_template_kwargs win
  EXPECT_EQ(kwargs["reasoning_effort"], "high");
}

TEST(HttpToolCalls, HistoryWithCallsAndResultsReachesTheTemplate) {
  ServerFixture server(hermes_thinker("It is sunny."));
  Json body = ask_weather();
  body["messages"].push_back(
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls",
        {{{"id", "call_1"},
          {"type", "function"},
          {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}}}}});
  body["messages"].push_back({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}});
  auto result = server.post("/v1/chat/completions", body);
  ASSERT_EQ(result->status, 200) << result->body;
  auto rendered = server.backend().last_render()["messages"];
  // String arguments holding an object reach templates as that object, as
  // mlx-lm's server gives them.
  EXPECT_EQ(rendered[1]["tool_calls"][0]["function"]["arguments"], Json({{"city", "Paris"}}));
  EXPECT_EQ(rendered[2]["tool_call_id"], "call_1");
}

TEST(HttpToolCalls, MistralTemplatesGetNineLetterIds) {
  FakeScript script = hermes_thinker("ok");
  script.output_format.tool_calls = &chat::tool_call_format("mistral");
  ServerFixture server(script);
  Json body = ask_weather();
  body["messages"].push_back({{"role", "assistant"},
                              {"tool_calls",
                               {{{"id", "call_abc-123"},
                                 {"type", "function"},
                                 {"function", {{"name", "get_weather"}, {"arguments", "{}"}}}}}}});
  body["messages"].push_back(
      {{"role", "tool"}, {"tool_call_id", "call_abc-123"}, {"content", "sunny"}});
  ASSERT_EQ(server.post("/v1/chat/completions", body)->status, 200);
  auto rendered = server.backend().last_render()["messages"];
  const std::string id = rendered[1]["tool_calls"][0]["id"];
  EXPECT_EQ(id.size(), 9u);
  EXPECT_EQ(rendered[2]["tool_call_id"], id);  // the result still names its call
}

TEST(HttpToolCalls, BadToolFieldsAre400sThatSayWhatToFix) {
  ServerFixture server(hermes_thinker(kThinkingCall));
  auto expect_400 = [&](Json body, const std::string& words) {
    auto result = server.post("/v1/chat/completions", body);
    ASSERT_EQ(result->status, 400) << body.dump();
    EXPECT_NE(result->body.find(words), std::string::npos) << result->body;
  };
  expect_400(chat_body("hi", {{"tools", "get_weather"}}), "'tools' must be a list");
  expect_400(chat_body("hi", {{"tools", {{{"type", "function"}, {"function", {{"x", 1}}}}}}}),
             "tools[0].function.name");
  Json twice = weather_tools();
  twice.push_back(twice[0]);
  expect_400(chat_body("hi", {{"tools", twice}}), "two tools are named");
  expect_400(ask_weather({{"tool_choice", "sometimes"}}), "'tool_choice' must be");
  expect_400(ask_weather({{"tool_choice", {{"type", "function"}, {"function", {{"name", "x"}}}}}}),
             "not in 'tools'");
  expect_400(chat_body("hi", {{"tool_choice", "required"}}), "'tools' offers none");
  expect_400(
      ask_weather({{"tool_choice", "required"}, {"response_format", {{"type", "json_object"}}}}),
      "cannot be combined");
  expect_400(chat_body("hi", {{"reasoning_effort", "max"}}), "'reasoning_effort' must be");
  Json orphan = chat_body("hi");
  orphan["messages"].push_back({{"role", "tool"}, {"tool_call_id", "nope"}, {"content", "x"}});
  expect_400(orphan, "no matching assistant tool call");
  Json bad_arguments = chat_body("hi");
  bad_arguments["messages"].push_back(
      {{"role", "assistant"},
       {"tool_calls", {{{"id", "c"}, {"function", {{"name", "f"}, {"arguments", "{oops"}}}}}}});
  expect_400(bad_arguments, "is not valid JSON");
  // The server still answers after all of these.
  EXPECT_EQ(server.post("/v1/chat/completions", ask_weather())->status, 200);
}

}  // namespace
}  // namespace mlx_cpp::server::testing

namespace mlx_cpp::server::testing {
namespace {

TEST(HttpToolCalls, ForcedCallsNeedAFormatAGrammarCanWrite) {
  FakeScript script = hermes_thinker("ok");
  // --tool-call-format none: answers are not parsed for calls, so none
  // can be forced.
  script.output_format.tool_calls = nullptr;
  ServerFixture server(script);
  auto result = server.post("/v1/chat/completions", ask_weather({{"tool_choice", "required"}}));
  ASSERT_EQ(result->status, 400);
  EXPECT_NE(result->body.find("(none) has no grammar for them"), std::string::npos) << result->body;
}

}  // namespace
}  // namespace mlx_cpp::server::testing
