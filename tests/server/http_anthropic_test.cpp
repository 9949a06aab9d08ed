// Anthropic's Messages API through the HTTP layer: messages of thinking,
// text and tool_use blocks, whole and streamed (the events in Anthropic's
// order, adding up to the whole message), stop reasons and usage, the
// request fields translated into the chat request (system, tool results,
// tool_choice, thinking), x-api-key, count_tokens, and 400s in Anthropic's
// error shape.
#include <gtest/gtest.h>

#include "agent_scripts.h"
#include "server/anthropic_request.h"
#include "server_fixture.h"

namespace mlx_cpp::server::testing {
namespace {

const std::string kThinkingAnswer = "<think>\nPondering.\n</think>\n\nIt is sunny.";

Json weather_tool() {
  return {{"name", "get_weather"},
          {"description", "Current weather"},
          {"input_schema", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}};
}

Json message_body(Json extra = Json::object()) {
  Json body = {{"model", "fake-model"},
               {"max_tokens", 1000},
               {"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}};
  for (auto& [key, value] : extra.items()) body[key] = value;
  return body;
}

Json with_tools(Json extra = Json::object()) {
  extra["tools"] = Json::array({weather_tool()});
  return message_body(std::move(extra));
}

// The content blocks a stream adds up to, checking the block indexes.
Json reassemble(const std::vector<Event>& events) {
  Json blocks = Json::array();
  std::vector<std::string> partial_json;
  int open = -1;
  for (const auto& event : events) {
    const auto& data = event.data;
    if (event.name == "content_block_start") {
      EXPECT_EQ(open, -1) << "a block starts before the last one stopped";
      EXPECT_EQ(data["index"], blocks.size());
      open = data["index"];
      blocks.push_back(data["content_block"]);
      partial_json.emplace_back();
    } else if (event.name == "content_block_delta") {
      EXPECT_EQ(data["index"], open);
      auto& block = blocks[open];
      const auto& delta = data["delta"];
      if (delta["type"] == "text_delta")
        block["text"] = block["text"].get<std::string>() + delta["text"].get<std::string>();
      else if (delta["type"] == "thinking_delta")
        block["thinking"] =
            block["thinking"].get<std::string>() + delta["thinking"].get<std::string>();
      else if (delta["type"] == "input_json_delta")
        partial_json[open] += delta["partial_json"].get<std::string>();
      else
        ADD_FAILURE() << delta.dump();
    } else if (event.name == "content_block_stop") {
      EXPECT_EQ(data["index"], open);
      if (blocks[open]["type"] == "tool_use")
        blocks[open]["input"] = Json::parse(partial_json[open]);
      open = -1;
    }
  }
  EXPECT_EQ(open, -1) << "a block never stopped";
  return blocks;
}

void expect_anthropic_error(const httplib::Result& result, int status, const std::string& type,
                            const std::string& words) {
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, status) << result->body;
  auto body = Json::parse(result->body);
  EXPECT_EQ(body["type"], "error") << result->body;
  EXPECT_EQ(body["error"]["type"], type) << result->body;
  EXPECT_NE(body["error"]["message"].get<std::string>().find(words), std::string::npos)
      << result->body;
}

TEST(HttpAnthropic, WholeTextAnswer) {
  ServerFixture server(hermes_thinker("It is sunny."));
  auto result = server.post("/v1/messages", message_body());
  ASSERT_EQ(result->status, 200) << result->body;
  auto body = Json::parse(result->body);
  EXPECT_EQ(body["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(body["type"], "message");
  EXPECT_EQ(body["role"], "assistant");
  EXPECT_EQ(body["model"], "fake-model");
  EXPECT_EQ(body["content"], Json::parse(R"([{"type": "text", "text": "It is sunny."}])"));
  EXPECT_EQ(body["stop_reason"], "end_turn");
  EXPECT_TRUE(body["stop_sequence"].is_null());
  // The fake reports 3 cached prompt tokens; Anthropic counts them apart.
  const auto& usage = body["usage"];
  EXPECT_EQ(usage["output_tokens"], std::string("It is sunny.").size());
  EXPECT_EQ(usage["cache_read_input_tokens"], 3);
  EXPECT_EQ(usage["cache_creation_input_tokens"], 0);
  auto counted = Json::parse(server.post("/v1/messages/count_tokens", message_body())->body);
  EXPECT_EQ(usage["input_tokens"].get<int>() + 3, counted["input_tokens"].get<int>());
}

TEST(HttpAnthropic, StreamedTextAddsUpToTheWholeAnswer) {
  ServerFixture server(hermes_thinker("It is sunny."));
  auto result = server.post("/v1/messages", message_body({{"stream", true}}));
  ASSERT_EQ(result->status, 200) << result->body;
  EXPECT_EQ(result->get_header_value("Content-Type"), "text/event-stream");
  auto events = named_events(result->body);
  auto names = names_of(events);
  ASSERT_GE(names.size(), 7u);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 3),
            (std::vector<std::string>{"message_start", "ping", "content_block_start"}));
  EXPECT_EQ(std::vector<std::string>(names.end() - 3, names.end()),
            (std::vector<std::string>{"content_block_stop", "message_delta", "message_stop"}));
  const auto& start = events[0].data["message"];
  EXPECT_EQ(start["content"], Json::array());
  EXPECT_EQ(start["role"], "assistant");
  EXPECT_GT(start["usage"]["input_tokens"].get<int>(), 0);
  EXPECT_EQ(reassemble(events), Json::parse(R"([{"type": "text", "text": "It is sunny."}])"));
  const auto& closing = events[events.size() - 2].data;
  EXPECT_EQ(closing["delta"]["stop_reason"], "end_turn");
  EXPECT_TRUE(closing["delta"]["stop_sequence"].is_null());
  EXPECT_EQ(closing["usage"]["output_tokens"], std::string("It is sunny.").size());
}

TEST(HttpAnthropic, ThinkingTextAndToolUseBlocks) {
  ServerFixture server(hermes_thinker(kThinkingCall));
  auto result = server.post("/v1/messages", with_tools());
  ASSERT_EQ(result->status, 200) << result->body;
  auto body = Json::parse(result->body);
  const auto& content = body["content"];
  ASSERT_EQ(content.size(), 3u) << body.dump();
  EXPECT_EQ(content[0], Json::parse(R"({"type": "thinking", "thinking": "The user wants weather.",
                                        "signature": ""})"));
  EXPECT_EQ(content[1], Json::parse(R"({"type": "text", "text": "Let me look."})"));
  EXPECT_EQ(content[2]["type"], "tool_use");
  EXPECT_FALSE(content[2]["id"].get<std::string>().empty());
  EXPECT_EQ(content[2]["name"], "get_weather");
  EXPECT_EQ(content[2]["input"], Json({{"city", "Paris"}}));
  EXPECT_EQ(body["stop_reason"], "tool_use");
  // The tools reached the template in OpenAI's shape.
  EXPECT_EQ(server.backend().last_render()["tools"][0]["function"]["parameters"],
            weather_tool()["input_schema"]);
}

TEST(HttpAnthropic, StreamedBlocksAddUpToTheWholeMessage) {
  ServerFixture server(hermes_thinker(kThinkingCall));
  auto whole = Json::parse(server.post("/v1/messages", with_tools())->body);
  auto result = server.post("/v1/messages", with_tools({{"stream", true}}));
  ASSERT_EQ(result->status, 200) << result->body;
  auto events = named_events(result->body);
  auto streamed = reassemble(events);
  ASSERT_EQ(streamed.size(), 3u) << result->body;
  EXPECT_EQ(streamed[0], whole["content"][0]);
  EXPECT_EQ(streamed[1], whole["content"][1]);
  EXPECT_EQ(streamed[2]["name"], "get_weather");
  EXPECT_EQ(streamed[2]["input"], whole["content"][2]["input"]);
  EXPECT_EQ(events[events.size() - 2].data["delta"]["stop_reason"], "tool_use");
  for (const auto& event : events) {
    if (event.name != "content_block_delta" || event.data["delta"]["type"] != "text_delta")
      continue;
    EXPECT_EQ(event.data["delta"]["text"].get<std::string>().find("<tool_call>"),
              std::string::npos);
  }
}

TEST(HttpAnthropic, MaxTokensStopReason) {
  ServerFixture server(hermes_thinker("It is sunny."));
  auto body = Json::parse(server.post("/v1/messages", message_body({{"max_tokens", 5}}))->body);
  EXPECT_EQ(body["stop_reason"], "max_tokens");
  EXPECT_EQ(body["usage"]["output_tokens"], 5);
  EXPECT_EQ(body["content"][0]["text"], "It is");
}

TEST(HttpAnthropic, SystemAsStringAndAsBlocks) {
  ServerFixture server(hermes_thinker("ok"));
  ASSERT_EQ(server.post("/v1/messages", message_body({{"system", "Be brief."}}))->status, 200);
  EXPECT_EQ(server.backend().last_render()["messages"][0],
            Json({{"role", "system"}, {"content", "Be brief."}}));
  Json blocks = Json::parse(R"([{"type": "text", "text": "Be "},
                                {"type": "text", "text": "brief.", "cache_control": {"type": "ephemeral"}}])");
  ASSERT_EQ(server.post("/v1/messages", message_body({{"system", blocks}}))->status, 200);
  EXPECT_EQ(server.backend().last_render()["messages"][0],
            Json({{"role", "system"}, {"content", "Be brief."}}));
}

Json tool_round_trip(bool is_error = false) {
  Json messages = Json::parse(R"([
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": [
      {"type": "thinking", "thinking": "Look it up.", "signature": ""},
      {"type": "text", "text": "Let me look."},
      {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "18C"}]},
      {"type": "text", "text": "Thanks."}]}])");
  if (is_error) messages[2]["content"][0]["is_error"] = true;
  return with_tools({{"messages", messages}});
}

TEST(HttpAnthropic, ToolResultReachesTheTemplateAsAToolMessage) {
  ServerFixture server(hermes_thinker("It is 18C."));
  auto result = server.post("/v1/messages", tool_round_trip());
  ASSERT_EQ(result->status, 200) << result->body;
  const auto messages = server.backend().last_render()["messages"];
  ASSERT_EQ(messages.size(), 4u) << messages.dump();
  const auto& assistant = messages[1];
  EXPECT_EQ(assistant["role"], "assistant");
  EXPECT_EQ(assistant["content"], "Let me look.");
  EXPECT_EQ(assistant["reasoning_content"], "Look it up.");
  EXPECT_EQ(assistant["tool_calls"][0]["id"], "toolu_1");
  EXPECT_EQ(assistant["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(assistant["tool_calls"][0]["function"]["arguments"], Json({{"city", "Paris"}}));
  EXPECT_EQ(messages[2], Json({{"role", "tool"}, {"tool_call_id", "toolu_1"}, {"content", "18C"}}));
  EXPECT_EQ(messages[3], Json({{"role", "user"}, {"content", "Thanks."}}));
  EXPECT_EQ(Json::parse(result->body)["stop_reason"], "end_turn");

  ASSERT_EQ(server.post("/v1/messages", tool_round_trip(/*is_error=*/true))->status, 200);
  EXPECT_EQ(server.backend().last_render()["messages"][2]["content"], "Error: 18C");
}

TEST(HttpAnthropic, ToolChoiceMapsToOpenAIs) {
  auto choice = [](const std::string& json) {
    return openai_chat_body(with_tools({{"tool_choice", Json::parse(json)}}),
                            AnthropicRoute::messages);
  };
  EXPECT_EQ(choice(R"({"type": "auto"})")["tool_choice"], "auto");
  EXPECT_EQ(choice(R"({"type": "any"})")["tool_choice"], "required");
  EXPECT_EQ(choice(R"({"type": "none"})")["tool_choice"], "none");
  EXPECT_EQ(choice(R"({"type": "tool", "name": "get_weather"})")["tool_choice"],
            Json::parse(R"({"type": "function", "function": {"name": "get_weather"}})"));
  EXPECT_EQ(choice(R"({"type": "any", "disable_parallel_tool_use": true})")["parallel_tool_calls"],
            false);
  // Through the server: none leaves the call markup as text.
  ServerFixture server(hermes_thinker(kThinkingCall));
  auto body = Json::parse(
      server.post("/v1/messages", with_tools({{"tool_choice", {{"type", "none"}}}}))->body);
  for (const auto& block : body["content"]) EXPECT_NE(block["type"], "tool_use");
  EXPECT_EQ(body["stop_reason"], "end_turn");
}

TEST(HttpAnthropic, ThinkingSwitchesEnableThinking) {
  ServerFixture server(hermes_thinker(kThinkingAnswer));
  ASSERT_EQ(
      server.post("/v1/messages", message_body({{"thinking", {{"type", "disabled"}}}}))->status,
      200);
  EXPECT_EQ(server.backend().last_render()["kwargs"]["enable_thinking"], false);
  auto result = server.post(
      "/v1/messages", message_body({{"thinking", {{"type", "enabled"}, {"budget_tokens", 2048}}}}));
  ASSERT_EQ(result->status, 200) << result->body;
  EXPECT_EQ(server.backend().last_render()["kwargs"]["enable_thinking"], true);
  // adaptive: the template's own default.
  ASSERT_EQ(
      server.post("/v1/messages", message_body({{"thinking", {{"type", "adaptive"}}}}))->status,
      200);
  EXPECT_FALSE(server.backend().last_render()["kwargs"].contains("enable_thinking"));
  auto body = Json::parse(result->body);
  EXPECT_EQ(body["content"][0]["thinking"], "Pondering.");
  EXPECT_EQ(body["content"][1]["text"], "It is sunny.");
}

TEST(HttpAnthropic, ApiKeyAcceptedAsXApiKey) {
  ServerConfig config;
  config.api_key = "sesame";
  ServerFixture server(hermes_thinker("ok"), config);
  auto refused = server.post("/v1/messages", message_body());
  expect_anthropic_error(refused, 401, "authentication_error", "x-api-key");
  auto accepted = server.client({{"x-api-key", "sesame"}})
                      .Post("/v1/messages", message_body().dump(), "application/json");
  EXPECT_EQ(accepted->status, 200) << accepted->body;
  auto wrong = server.client({{"x-api-key", "sesamo"}})
                   .Post("/v1/messages", message_body().dump(), "application/json");
  EXPECT_EQ(wrong->status, 401);
  auto bearer = server.client({{"Authorization", "Bearer sesame"}})
                    .Post("/v1/messages", message_body().dump(), "application/json");
  EXPECT_EQ(bearer->status, 200);
}

TEST(HttpAnthropic, CountTokensNeedsNoMaxTokens) {
  ServerFixture server(hermes_thinker("ok"));
  Json body = message_body({{"system", "Be brief."}});
  body.erase("max_tokens");
  auto result = server.post("/v1/messages/count_tokens", body);
  ASSERT_EQ(result->status, 200) << result->body;
  // The fake's template writes "role: content\n" lines, a token per byte.
  EXPECT_EQ(
      Json::parse(result->body),
      Json({{"input_tokens", std::string("system: Be brief.\nuser: Weather in Paris?\n").size()}}));
  EXPECT_EQ(server.backend().started(), 0);  // nothing was generated
}

TEST(HttpAnthropic, BadRequestsAreAnthropicErrors) {
  ServerFixture server(hermes_thinker("ok"));
  Json no_max_tokens = message_body();
  no_max_tokens.erase("max_tokens");
  expect_anthropic_error(server.post("/v1/messages", no_max_tokens), 400, "invalid_request_error",
                         "'max_tokens' is required");
  Json image = message_body({{"messages", Json::parse(R"([{"role": "user", "content": [
      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]}])")}});
  expect_anthropic_error(server.post("/v1/messages", image), 400, "invalid_request_error",
                         "'messages[0].content[0]': content blocks of type 'image'");
  Json orphan_result = message_body({{"messages", Json::parse(R"([{"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_9", "content": "18C"}]}])")}});
  expect_anthropic_error(server.post("/v1/messages", orphan_result), 400, "invalid_request_error",
                         "matches no tool_use");
  expect_anthropic_error(
      server.post("/v1/messages", with_tools({{"tool_choice", {{"type", "sometimes"}}}})), 400,
      "invalid_request_error", "'tool_choice.type' must be auto, any, tool or none");
  expect_anthropic_error(
      server.post("/v1/messages",
                  with_tools({{"tool_choice", {{"type", "tool"}, {"name", "nope"}}}})),
      400, "invalid_request_error", "not in 'tools'");
  expect_anthropic_error(server.post("/v1/messages", message_body({{"max_tokens", "many"}})), 400,
                         "invalid_request_error", "'max_tokens' must be an integer");
  expect_anthropic_error(server.post("/v1/messages", message_body({{"temperature", "hot"}})), 400,
                         "invalid_request_error", "temperature");
  expect_anthropic_error(server.post("/v1/messages", message_body({{"messages", "hi"}})), 400,
                         "invalid_request_error", "'messages' must be a non-empty list");
  expect_anthropic_error(server.post("/v1/messages", message_body({{"system", 3}})), 400,
                         "invalid_request_error", "'system' must be a string");
  Json prefill = message_body({{"messages", Json::parse(R"([{"role": "user", "content": "hi"},
      {"role": "assistant", "content": "Hello"}])")}});
  expect_anthropic_error(server.post("/v1/messages", prefill), 400, "invalid_request_error",
                         "prefill");
  expect_anthropic_error(server.post("/v1/messages/count_tokens", message_body({{"tools", 1}})),
                         400, "invalid_request_error", "'tools' must be a list");
  auto unknown = server.post("/v1/messages/batches", message_body());
  expect_anthropic_error(unknown, 404, "not_found_error", "");
  auto malformed = server.client().Post("/v1/messages", "{", "application/json");
  expect_anthropic_error(malformed, 400, "invalid_request_error", "");
  // Still serving after all of them.
  EXPECT_EQ(server.post("/v1/messages", message_body())->status, 200);
}

}  // namespace
}  // namespace mlx_cpp::server::testing
