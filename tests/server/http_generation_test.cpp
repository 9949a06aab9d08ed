// Chat and text completions through the HTTP layer: whole and streamed
// responses, usage, logprobs, lengths, cancellation when a client goes
// away, the bounded queue and many clients at once.
#include <gtest/gtest.h>

#include <future>

#include "server_fixture.h"

namespace mlx_cpp::server::testing {
namespace {

const std::string kReply = FakeScript{}.reply;

TEST(HttpGeneration, ChatCompletionWhole) {
  ServerFixture server;
  auto result = server.post("/v1/chat/completions", chat_body("hi"));
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200) << result->body;
  auto body = Json::parse(result->body);
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["model"], "fake-model");
  EXPECT_EQ(body["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(body["choices"][0]["message"]["content"], kReply);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 9);  // "user: hi\n"
  EXPECT_EQ(body["usage"]["completion_tokens"], kReply.size());
  EXPECT_EQ(body["usage"]["total_tokens"], 9 + kReply.size());
  EXPECT_EQ(body["usage"]["prompt_tokens_details"]["cached_tokens"], 3);
  // Omitted sampling fields take the model's defaults.
  EXPECT_FLOAT_EQ(server.backend().last_request().options.sampler.temperature, 0.5f);
}

TEST(HttpGeneration, MaxTokensEndsWithLength) {
  ServerFixture server;
  auto body =
      Json::parse(server.post("/v1/chat/completions", chat_body("hi", {{"max_tokens", 5}}))->body);
  EXPECT_EQ(body["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["completion_tokens"], 5);
}

TEST(HttpGeneration, MaxTokensIsLimitedToTheContextLeft) {
  ServerFixture server;  // 64-token context, 9-token prompt
  server.post("/v1/chat/completions", chat_body("hi", {{"max_tokens", 60}}));
  EXPECT_EQ(server.backend().last_request().options.max_tokens, 55);
  server.post("/v1/chat/completions", chat_body("hi"));
  EXPECT_EQ(server.backend().last_request().options.max_tokens, 55);
}

TEST(HttpGeneration, RequestFieldsReachTheEngine) {
  ServerFixture server;
  server.post("/v1/chat/completions",
              chat_body("hi", {{"stop", {"x", "yz"}},
                               {"seed", 11},
                               {"temperature", 0},
                               {"chat_template_kwargs", {{"suffix", "assistant: "}}}}));
  auto request = server.backend().last_request();
  EXPECT_EQ(request.stop, (std::vector<std::string>{"x", "yz"}));
  EXPECT_EQ(request.options.sampler.seed, 11u);
  EXPECT_EQ(request.options.sampler.temperature, 0.0f);
  EXPECT_EQ(request.prompt_ids.size(), 9u + 11u);  // the template kwarg was passed through
}

TEST(HttpGeneration, ChatCompletionStreamed) {
  ServerFixture server;
  auto result = server.post(
      "/v1/chat/completions",
      chat_body("hi", {{"stream", true}, {"stream_options", {{"include_usage", true}}}}));
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200);
  EXPECT_EQ(result->get_header_value("Content-Type"), "text/event-stream");
  auto events = sse_payloads(result->body);
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.front()["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(events.back(), "[DONE]");
  const auto& usage = events[events.size() - 2];
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], kReply.size());
  const auto& final_chunk = events[events.size() - 3];
  EXPECT_EQ(final_chunk["choices"][0]["finish_reason"], "stop");
  std::string text;
  for (size_t i = 1; i + 3 < events.size(); ++i) {
    EXPECT_EQ(events[i]["object"], "chat.completion.chunk");
    EXPECT_TRUE(events[i]["choices"][0]["finish_reason"].is_null());
    text += events[i]["choices"][0]["delta"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, kReply);
  for (const auto& event : events)
    if (event.is_object()) {
      EXPECT_EQ(event["id"], events.front()["id"]);
    }
}

TEST(HttpGeneration, StreamWithoutUsageEndsWithFinalChunkAndDone) {
  ServerFixture server;
  auto events =
      sse_payloads(server.post("/v1/chat/completions", chat_body("hi", {{"stream", true}}))->body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(events[events.size() - 2]["choices"][0]["finish_reason"], "stop");
  for (const auto& event : events)
    if (event.is_object()) {
      EXPECT_FALSE(event.contains("usage"));
    }
}

TEST(HttpGeneration, ChatLogprobsWholeAndStreamed) {
  ServerFixture server;
  Json extra = {{"logprobs", true}, {"top_logprobs", 2}, {"max_tokens", 3}};
  auto body = Json::parse(server.post("/v1/chat/completions", chat_body("hi", extra))->body);
  const auto& content = body["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 3u);
  EXPECT_EQ(content[0]["token"], "H");
  EXPECT_EQ(content[0]["logprob"], -0.5);
  EXPECT_EQ(content[0]["bytes"], Json({72}));
  ASSERT_EQ(content[0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(content[0]["top_logprobs"][1]["token"], "b");

  extra["stream"] = true;
  auto events = sse_payloads(server.post("/v1/chat/completions", chat_body("hi", extra))->body);
  int entries = 0;
  for (const auto& event : events)
    if (event.is_object() && !event["choices"].empty() &&
        event["choices"][0]["logprobs"].is_object())
      entries += event["choices"][0]["logprobs"]["content"].size();
  EXPECT_EQ(entries, 3);
}

TEST(HttpGeneration, TextCompletionWholeAndStreamed) {
  ServerFixture server;
  auto result =
      server.post("/v1/completions", {{"prompt", "Once"}, {"max_tokens", 4}, {"logprobs", 1}});
  ASSERT_EQ(result->status, 200) << result->body;
  auto body = Json::parse(result->body);
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], "Hell");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 5);  // special token + 4 bytes
  const auto& logprobs = body["choices"][0]["logprobs"];
  EXPECT_EQ(logprobs["tokens"], Json({"H", "e", "l", "l"}));
  EXPECT_EQ(logprobs["text_offset"], Json({0, 1, 2, 3}));
  EXPECT_EQ(logprobs["top_logprobs"][0]["a"], -1.0);

  auto ids =
      Json::parse(server.post("/v1/completions", {{"prompt", {1, 2}}, {"max_tokens", 1}})->body);
  EXPECT_EQ(ids["usage"]["prompt_tokens"], 2);

  auto events =
      sse_payloads(server.post("/v1/completions", {{"prompt", "Once"}, {"stream", true}})->body);
  std::string text;
  for (const auto& event : events)
    if (event.is_object()) text += event["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, kReply);
  EXPECT_EQ(events.back(), "[DONE]");
}

// Waits for the engine to be idle, then checks it still answers.
void expect_recovered(ServerFixture& server) {
  ASSERT_TRUE(ServerFixture::eventually([&] { return server.engine().active() == 0; }));
  auto result = server.post("/v1/completions", {{"prompt", "a"}, {"max_tokens", 2}});
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200);
}

// Generates until cancelled, one token per millisecond.
FakeScript endless_script() {
  FakeScript script;
  script.until_cancelled = true;
  script.context_size = 1 << 30;
  script.token_delay = std::chrono::milliseconds(1);
  return script;
}

bool metrics_say(const ServerFixture& server, const std::string& line) {
  auto result = server.client().Get("/metrics");
  return result && result->body.find(line + "\n") != std::string::npos;
}

TEST(HttpGeneration, ClientDisconnectMidStreamCancelsGeneration) {
  ServerFixture server(endless_script());
  EXPECT_TRUE(metrics_say(server, "mlx_cpp_generations_cancelled_total 0"));
  int socket_fd = server.connect_raw();
  ASSERT_GE(socket_fd, 0);
  ServerFixture::send_request(socket_fd, "/v1/chat/completions",
                              chat_body("hi", {{"stream", true}}).dump());
  auto received = ServerFixture::read_until(socket_fd, "{\"content\":\"x\"}");
  EXPECT_NE(received.find("200 OK"), std::string::npos);
  ::close(socket_fd);
  EXPECT_TRUE(ServerFixture::eventually([&] { return server.backend().cancelled() == 1; }));
  EXPECT_TRUE(ServerFixture::eventually(
      [&] { return metrics_say(server, "mlx_cpp_generations_cancelled_total 1"); }));
  expect_recovered(server);
  // An answer written to the end is not a cancellation.
  EXPECT_TRUE(metrics_say(server, "mlx_cpp_generations_cancelled_total 1"));
}

TEST(HttpGeneration, ClientDisconnectDuringWholeResponseCancelsGeneration) {
  ServerFixture server(endless_script());
  int socket_fd = server.connect_raw();
  ASSERT_GE(socket_fd, 0);
  ServerFixture::send_request(socket_fd, "/v1/completions", Json{{"prompt", "go"}}.dump());
  ASSERT_TRUE(ServerFixture::eventually([&] { return server.backend().started() == 1; }));
  ::close(socket_fd);
  EXPECT_TRUE(ServerFixture::eventually([&] { return server.backend().cancelled() == 1; }));
  expect_recovered(server);
}

TEST(HttpGeneration, FullQueueAnswers503AndQueuedRequestsStillFinish) {
  FakeScript script;
  script.hold_at_gate = true;
  ServerConfig config;
  config.max_queue = 2;
  ServerFixture server(script, config);
  auto first = std::async(std::launch::async,
                          [&] { return server.post("/v1/chat/completions", chat_body("a")); });
  auto second = std::async(std::launch::async,
                           [&] { return server.post("/v1/chat/completions", chat_body("b")); });
  ASSERT_TRUE(ServerFixture::eventually([&] { return server.engine().active() == 2; }));
  auto rejected = server.post("/v1/chat/completions", chat_body("c"));
  ASSERT_TRUE(rejected);
  EXPECT_EQ(rejected->status, 503);
  EXPECT_EQ(Json::parse(rejected->body)["error"]["type"], "unavailable_error");
  server.backend().open_gate();
  for (auto* pending : {&first, &second}) {
    auto result = pending->get();
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 200);
    EXPECT_EQ(Json::parse(result->body)["choices"][0]["message"]["content"], kReply);
  }
}

TEST(HttpGeneration, SixteenClientsAtOnceAllComplete) {
  ServerFixture server;
  std::vector<std::future<httplib::Result>> clients;
  for (int i = 0; i < 16; ++i)
    clients.push_back(std::async(std::launch::async, [&server, i] {
      Json extra = {{"stream", i % 2 == 0}};
      return server.post("/v1/chat/completions", chat_body("client " + std::to_string(i), extra));
    }));
  for (int i = 0; i < 16; ++i) {
    auto result = clients[i].get();
    ASSERT_TRUE(result) << "client " << i << ": " << httplib::to_string(result.error());
    ASSERT_EQ(result->status, 200);
    std::string text;
    if (i % 2 == 0) {
      for (const auto& event : sse_payloads(result->body))
        if (event.is_object() && !event["choices"].empty())
          text += event["choices"][0]["delta"].value("content", "");
    } else {
      text = Json::parse(result->body)["choices"][0]["message"]["content"];
    }
    EXPECT_EQ(text, kReply) << "client " << i;
  }
  EXPECT_EQ(server.engine().active(), 0u);
}

}  // namespace
}  // namespace mlx_cpp::server::testing
