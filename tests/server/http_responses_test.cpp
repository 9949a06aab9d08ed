// OpenAI's Responses API through the HTTP layer: output items (reasoning,
// message, function_call) whole and streamed (the events in OpenAI's order
// with a growing sequence_number, adding up to the whole response), the
// request's items translated into the chat request (instructions, function
// call outputs), the store (previous_response_id, GET, DELETE, store false),
// max_output_tokens, and 400s naming the Responses field at fault.
#include <gtest/gtest.h>

#include <algorithm>

#include "agent_scripts.h"
#include "server_fixture.h"

namespace mlx_cpp::server::testing {
namespace {

Json weather_tool() {
  return {{"type", "function"},
          {"name", "get_weather"},
          {"description", "Current weather"},
          {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}};
}

Json response_body(Json extra = Json::object()) {
  Json body = {{"model", "fake-model"}, {"input", "Weather in Paris?"}};
  for (auto& [key, value] : extra.items()) body[key] = value;
  return body;
}

Json with_tools(Json extra = Json::object()) {
  extra["tools"] = Json::array({weather_tool()});
  return response_body(std::move(extra));
}

// The output items a stream adds up to, checking sequence numbers, output
// indexes and item ids against the items they belong to.
Json reassemble(const std::vector<Event>& events) {
  Json items = Json::array();
  int open = -1;
  int sequence = -1;
  for (const auto& event : events) {
    const auto& data = event.data;
    EXPECT_GT(data["sequence_number"].get<int>(), sequence) << data.dump();
    sequence = data["sequence_number"];
    if (event.name == "response.output_item.added") {
      EXPECT_EQ(open, -1) << "an item starts before the last one is done";
      EXPECT_EQ(data["output_index"], items.size());
      open = data["output_index"];
      items.push_back(data["item"]);
      continue;
    }
    if (!data.contains("output_index")) continue;
    EXPECT_EQ(data["output_index"], open) << data.dump();
    auto& item = items[open];
    if (data.contains("item_id")) {
      EXPECT_EQ(data["item_id"], item["id"]);
    }
    if (event.name == "response.content_part.added") {
      item["content"].push_back(data["part"]);
    } else if (event.name == "response.output_text.delta" ||
               event.name == "response.reasoning_text.delta") {
      auto& text = item["content"][data["content_index"].get<int>()]["text"];
      text = text.get<std::string>() + data["delta"].get<std::string>();
    } else if (event.name == "response.function_call_arguments.delta") {
      item["arguments"] = item["arguments"].get<std::string>() + data["delta"].get<std::string>();
    } else if (event.name == "response.function_call_arguments.done") {
      EXPECT_EQ(data["arguments"], item["arguments"]);
    } else if (event.name == "response.output_text.done" ||
               event.name == "response.reasoning_text.done") {
      EXPECT_EQ(data["text"], item["content"][0]["text"]);
    } else if (event.name == "response.output_item.done") {
      EXPECT_EQ(data["item"]["id"], item["id"]);
      item = data["item"];
      open = -1;
    }
  }
  EXPECT_EQ(open, -1) << "an item was never done";
  return items;
}

void expect_error(const httplib::Result& result, int status, const std::string& param,
                  const std::string& words) {
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, status) << result->body;
  auto body = Json::parse(result->body);
  EXPECT_EQ(body["error"]["type"], "invalid_request_error") << result->body;
  if (!param.empty()) {
    EXPECT_EQ(body["error"]["param"], param) << result->body;
  }
  EXPECT_NE(body["error"]["message"].get<std::string>().find(words), std::string::npos)
      << result->body;
}

TEST(HttpResponses, WholeTextAnswer) {
  ServerFixture server(hermes_thinker("It is sunny."));
  auto result = server.post("/v1/responses", response_body({{"metadata", {{"k", "v"}}}}));
  ASSERT_EQ(result->status, 200) << result->body;
  auto body = Json::parse(result->body);
  EXPECT_EQ(body["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(body["object"], "response");
  EXPECT_EQ(body["status"], "completed");
  EXPECT_TRUE(body["incomplete_details"].is_null());
  EXPECT_EQ(body["model"], "fake-model");
  ASSERT_EQ(body["output"].size(), 1u) << body.dump();
  const auto& message = body["output"][0];
  EXPECT_EQ(message["type"], "message");
  EXPECT_EQ(message["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(message["status"], "completed");
  EXPECT_EQ(message["role"], "assistant");
  EXPECT_EQ(message["content"], Json::parse(R"([{"type": "output_text", "text": "It is sunny.",
                                                 "annotations": []}])"));
  EXPECT_EQ(body["output_text"], "It is sunny.");
  const auto& usage = body["usage"];
  EXPECT_EQ(usage["output_tokens"], std::string("It is sunny.").size());
  EXPECT_EQ(usage["input_tokens_details"]["cached_tokens"], 3);
  EXPECT_EQ(usage["output_tokens_details"]["reasoning_tokens"], 0);
  EXPECT_EQ(usage["total_tokens"],
            usage["input_tokens"].get<int>() + usage["output_tokens"].get<int>());
  EXPECT_EQ(body["store"], true);
  EXPECT_EQ(body["tool_choice"], "auto");
  EXPECT_EQ(body["tools"], Json::array());
  EXPECT_EQ(body["text"], Json::parse(R"({"format": {"type": "text"}})"));
  EXPECT_EQ(body["metadata"], Json({{"k", "v"}}));
  EXPECT_TRUE(body["previous_response_id"].is_null());
  EXPECT_EQ(server.backend().last_render()["messages"],
            Json::parse(R"([{"role": "user", "content": "Weather in Paris?"}])"));
}

TEST(HttpResponses, StreamedTextAddsUpToTheWholeAnswer) {
  ServerFixture server(hermes_thinker("It is sunny."));
  auto result = server.post("/v1/responses", response_body({{"stream", true}}));
  ASSERT_EQ(result->status, 200) << result->body;
  EXPECT_EQ(result->get_header_value("Content-Type"), "text/event-stream");
  auto events = named_events(result->body);
  auto names = names_of(events);
  ASSERT_GE(names.size(), 9u);
  EXPECT_EQ(
      std::vector<std::string>(names.begin(), names.begin() + 4),
      (std::vector<std::string>{"response.created", "response.in_progress",
                                "response.output_item.added", "response.content_part.added"}));
  EXPECT_EQ(names[4], "response.output_text.delta");
  EXPECT_EQ(std::vector<std::string>(names.end() - 4, names.end()),
            (std::vector<std::string>{"response.output_text.done", "response.content_part.done",
                                      "response.output_item.done", "response.completed"}));
  const auto& created = events[0].data["response"];
  EXPECT_EQ(created["status"], "in_progress");
  EXPECT_EQ(created["output"], Json::array());
  const auto& completed = events.back().data["response"];
  EXPECT_EQ(completed["id"], created["id"]);
  EXPECT_EQ(completed["status"], "completed");
  auto items = reassemble(events);
  EXPECT_EQ(items, completed["output"]);
  EXPECT_EQ(completed["output_text"], "It is sunny.");
  EXPECT_EQ(completed["usage"]["output_tokens"], std::string("It is sunny.").size());
}

TEST(HttpResponses, ReasoningMessageAndFunctionCallItems) {
  ServerFixture server(hermes_thinker(kThinkingCall));
  auto result = server.post("/v1/responses", with_tools());
  ASSERT_EQ(result->status, 200) << result->body;
  auto body = Json::parse(result->body);
  const auto& output = body["output"];
  ASSERT_EQ(output.size(), 3u) << body.dump();
  EXPECT_EQ(output[0]["type"], "reasoning");
  EXPECT_EQ(output[0]["summary"], Json::array());
  EXPECT_EQ(output[0]["content"],
            Json::parse(R"([{"type": "reasoning_text", "text": "The user wants weather."}])"));
  EXPECT_EQ(output[1]["type"], "message");
  EXPECT_EQ(output[1]["content"][0]["text"], "Let me look.");
  const auto& call = output[2];
  EXPECT_EQ(call["type"], "function_call");
  EXPECT_EQ(call["id"].get<std::string>().rfind("fc_", 0), 0u);
  EXPECT_FALSE(call["call_id"].get<std::string>().empty());
  EXPECT_EQ(call["name"], "get_weather");
  EXPECT_EQ(Json::parse(call["arguments"].get<std::string>()), Json({{"city", "Paris"}}));
  EXPECT_EQ(call["status"], "completed");
  EXPECT_GT(body["usage"]["output_tokens_details"]["reasoning_tokens"].get<int>(), 0);
  EXPECT_EQ(body["tools"], Json::array({weather_tool()}));
  // The flat tool reached the template in the chat API's nested shape.
  EXPECT_EQ(server.backend().last_render()["tools"][0]["function"]["parameters"],
            weather_tool()["parameters"]);
}

TEST(HttpResponses, StreamedItemsAddUpToTheWholeResponse) {
  ServerFixture server(hermes_thinker(kThinkingCall));
  auto whole = Json::parse(server.post("/v1/responses", with_tools())->body);
  auto result = server.post("/v1/responses", with_tools({{"stream", true}}));
  ASSERT_EQ(result->status, 200) << result->body;
  auto events = named_events(result->body);
  auto items = reassemble(events);
  ASSERT_EQ(items.size(), 3u) << result->body;
  EXPECT_EQ(items, events.back().data["response"]["output"]);
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(items[i]["type"], whole["output"][i]["type"]);
    if (items[i].contains("content")) {
      EXPECT_EQ(items[i]["content"], whole["output"][i]["content"]);
    }
  }
  EXPECT_EQ(items[2]["arguments"], whole["output"][2]["arguments"]);
  auto names = names_of(events);
  EXPECT_NE(std::find(names.begin(), names.end(), "response.reasoning_text.delta"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "response.function_call_arguments.done"),
            names.end());
  for (const auto& event : events) {
    if (event.name == "response.output_text.delta") {
      EXPECT_EQ(event.data["delta"].get<std::string>().find("<tool_call>"), std::string::npos);
    }
  }
}

Json function_call_round_trip() {
  return with_tools({{"input", Json::parse(R"([
    {"role": "user", "content": "Weather in Paris?"},
    {"type": "reasoning", "id": "rs_1", "summary": [],
     "content": [{"type": "reasoning_text", "text": "Look it up."}]},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
    {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "18C"}])")}});
}

TEST(HttpResponses, FunctionCallOutputReachesTheTemplateAsAToolMessage) {
  ServerFixture server(hermes_thinker("It is 18C."));
  auto result = server.post("/v1/responses", function_call_round_trip());
  ASSERT_EQ(result->status, 200) << result->body;
  const auto messages = server.backend().last_render()["messages"];
  ASSERT_EQ(messages.size(), 3u) << messages.dump();
  const auto& assistant = messages[1];
  EXPECT_EQ(assistant["role"], "assistant");
  EXPECT_EQ(assistant["content"], "Let me look.");
  EXPECT_EQ(assistant["reasoning_content"], "Look it up.");
  EXPECT_EQ(assistant["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(assistant["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(assistant["tool_calls"][0]["function"]["arguments"], Json({{"city", "Paris"}}));
  EXPECT_EQ(messages[2], Json({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "18C"}}));
  EXPECT_EQ(Json::parse(result->body)["output_text"], "It is 18C.");
}

TEST(HttpResponses, InstructionsBecomeTheSystemMessage) {
  ServerFixture server(hermes_thinker("ok"));
  ASSERT_EQ(server.post("/v1/responses", response_body({{"instructions", "Be brief."}}))->status,
            200);
  EXPECT_EQ(server.backend().last_render()["messages"][0],
            Json({{"role", "system"}, {"content", "Be brief."}}));
  Json developer = response_body({{"input", Json::parse(R"([
      {"role": "developer", "content": "Be kind."},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]}])")}});
  ASSERT_EQ(server.post("/v1/responses", developer)->status, 200);
  EXPECT_EQ(server.backend().last_render()["messages"],
            Json::parse(R"([{"role": "system", "content": "Be kind."},
                            {"role": "user", "content": "Hi"}])"));
}

TEST(HttpResponses, PreviousResponseIdContinuesTheConversation) {
  ServerFixture server(hermes_thinker("It is sunny."));
  auto first = Json::parse(
      server.post("/v1/responses", response_body({{"instructions", "Be brief."}}))->body);
  auto result = server.post(
      "/v1/responses",
      response_body({{"input", "And tomorrow?"}, {"previous_response_id", first["id"]}}));
  ASSERT_EQ(result->status, 200) << result->body;
  EXPECT_EQ(Json::parse(result->body)["previous_response_id"], first["id"]);
  // The first input and output, then the new input; instructions are not
  // carried over.
  EXPECT_EQ(server.backend().last_render()["messages"],
            Json::parse(R"([{"role": "user", "content": "Weather in Paris?"},
                            {"role": "assistant", "content": "It is sunny."},
                            {"role": "user", "content": "And tomorrow?"}])"));
  // A chain of three: the second's conversation includes the first's.
  auto second = Json::parse(result->body);
  ASSERT_EQ(server
                .post("/v1/responses",
                      response_body({{"input", "Thanks."}, {"previous_response_id", second["id"]}}))
                ->status,
            200);
  EXPECT_EQ(server.backend().last_render()["messages"].size(), 5u);
}

TEST(HttpResponses, FunctionCallOutputAnswersACallOfThePreviousResponse) {
  ServerFixture server(hermes_thinker(kThinkingCall));
  auto first = Json::parse(server.post("/v1/responses", with_tools())->body);
  const auto call_id = first["output"][2]["call_id"];
  Json follow_up = with_tools({{"previous_response_id", first["id"]},
                               {"input", Json::array({{{"type", "function_call_output"},
                                                       {"call_id", call_id},
                                                       {"output", "18C"}}})}});
  ASSERT_EQ(server.post("/v1/responses", follow_up)->status, 200);
  const auto messages = server.backend().last_render()["messages"];
  ASSERT_EQ(messages.size(), 3u) << messages.dump();
  EXPECT_EQ(messages[1]["content"], "Let me look.");
  EXPECT_EQ(messages[1]["reasoning_content"], "The user wants weather.");
  EXPECT_EQ(messages[1]["tool_calls"][0]["id"], call_id);
  EXPECT_EQ(messages[2]["role"], "tool");
  EXPECT_EQ(messages[2]["content"], "18C");
}

TEST(HttpResponses, StreamedResponsesAreStoredToo) {
  ServerFixture server(hermes_thinker("It is sunny."));
  auto events = named_events(server.post("/v1/responses", response_body({{"stream", true}}))->body);
  const auto completed = events.back().data["response"];
  auto stored =
      server.client().Get(("/v1/responses/" + completed["id"].get<std::string>()).c_str());
  ASSERT_EQ(stored->status, 200) << stored->body;
  EXPECT_EQ(Json::parse(stored->body), completed);
}

TEST(HttpResponses, GetAndDeleteAStoredResponse) {
  ServerFixture server(hermes_thinker("It is sunny."));
  auto created = Json::parse(server.post("/v1/responses", response_body())->body);
  const std::string path = "/v1/responses/" + created["id"].get<std::string>();
  auto got = server.client().Get(path.c_str());
  ASSERT_EQ(got->status, 200) << got->body;
  EXPECT_EQ(Json::parse(got->body), created);
  auto deleted = server.client().Delete(path.c_str());
  ASSERT_EQ(deleted->status, 200) << deleted->body;
  EXPECT_EQ(Json::parse(deleted->body),
            Json({{"id", created["id"]}, {"object", "response.deleted"}, {"deleted", true}}));
  auto gone = server.client().Get(path.c_str());
  expect_error(gone, 404, "", "no stored response");
  EXPECT_EQ(Json::parse(gone->body)["error"]["code"], "not_found");
  expect_error(server.client().Delete(path.c_str()), 404, "", "no stored response");
}

TEST(HttpResponses, StoreFalseKeepsNothing) {
  ServerFixture server(hermes_thinker("It is sunny."));
  auto created = Json::parse(server.post("/v1/responses", response_body({{"store", false}}))->body);
  EXPECT_EQ(created["store"], false);
  expect_error(server.client().Get(("/v1/responses/" + created["id"].get<std::string>()).c_str()),
               404, "", "no stored response");
  expect_error(
      server.post("/v1/responses", response_body({{"previous_response_id", created["id"]}})), 400,
      "previous_response_id", "names no stored response");
}

TEST(HttpResponses, MaxOutputTokensMakesAnIncompleteResponse) {
  ServerFixture server(hermes_thinker("It is sunny."));
  auto body =
      Json::parse(server.post("/v1/responses", response_body({{"max_output_tokens", 5}}))->body);
  EXPECT_EQ(body["status"], "incomplete");
  EXPECT_EQ(body["incomplete_details"], Json({{"reason", "max_output_tokens"}}));
  EXPECT_EQ(body["max_output_tokens"], 5);
  EXPECT_EQ(body["usage"]["output_tokens"], 5);
  EXPECT_EQ(body["output_text"], "It is");
  auto events = named_events(
      server.post("/v1/responses", response_body({{"max_output_tokens", 5}, {"stream", true}}))
          ->body);
  EXPECT_EQ(events.back().name, "response.incomplete");
  EXPECT_EQ(events.back().data["response"]["status"], "incomplete");
}

TEST(HttpResponses, BadRequestsNameTheirField) {
  ServerFixture server(hermes_thinker("ok"));
  expect_error(server.post("/v1/responses", response_body({{"previous_response_id", "resp_nope"}})),
               400, "previous_response_id", "resp_nope");
  Json image = response_body({{"input", Json::parse(R"([{"role": "user", "content": [
      {"type": "input_text", "text": "What is this?"},
      {"type": "input_image", "image_url": "https://example.com/a.png"}]}])")}});
  expect_error(server.post("/v1/responses", image), 400, "input[0].content[1]",
               "content parts of type 'input_image'");
  Json orphan = with_tools({{"input", Json::parse(R"([{"role": "user", "content": "Hi"},
      {"type": "function_call_output", "call_id": "call_9", "output": "18C"}])")}});
  expect_error(server.post("/v1/responses", orphan), 400, "input[1].call_id",
               "matches no function_call");
  expect_error(
      server.post("/v1/responses", response_body({{"text", {{"format", {{"type", "yaml"}}}}}})),
      400, "text.format.type", "must be text, json_object or json_schema");
  expect_error(server.post("/v1/responses",
                           response_body({{"text", {{"format", {{"type", "json_schema"}}}}}})),
               400, "text.format.schema", "is required");
  expect_error(server.post("/v1/responses",
                           response_body({{"tools", Json::parse(R"([{"type": "web_search"}])")}})),
               400, "tools[0].type", "tools of type 'web_search'");
  Json search_call =
      response_body({{"input", Json::parse(R"([{"type": "web_search_call", "id": "ws_1"}])")}});
  expect_error(server.post("/v1/responses", search_call), 400, "input[0]",
               "items of type 'web_search_call'");
  expect_error(server.post("/v1/responses", response_body({{"input", Json::array()}})), 400,
               "input", "non-empty list");
  expect_error(server.post("/v1/responses", response_body({{"reasoning", {{"effort", "max"}}}})),
               400, "reasoning.effort", "must be none");
  expect_error(server.post("/v1/responses",
                           with_tools({{"tool_choice", {{"type", "function"}, {"name", "nope"}}}})),
               400, "tool_choice", "not in 'tools'");
  // Still serving after all of them.
  EXPECT_EQ(server.post("/v1/responses", response_body())->status, 200);
}

}  // namespace
}  // namespace mlx_cpp::server::testing
