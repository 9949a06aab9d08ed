// The HTTP layer around generation: routing, error bodies and statuses,
// authentication, CORS, health while loading, tokenize/detokenize, metrics.
#include <gtest/gtest.h>

#include "server_fixture.h"

namespace mlx_cpp::server::testing {
namespace {

void expect_error_body(const httplib::Result& result, int status, const std::string& type) {
  ASSERT_TRUE(result) << "no response";
  EXPECT_EQ(result->status, status) << result->body;
  auto body = Json::parse(result->body);
  ASSERT_TRUE(body.contains("error")) << result->body;
  EXPECT_TRUE(body["error"]["message"].is_string());
  EXPECT_EQ(body["error"]["type"], type);
  EXPECT_TRUE(body["error"].contains("param"));
  EXPECT_TRUE(body["error"].contains("code"));
  EXPECT_EQ(result->get_header_value("Content-Type"), "application/json");
}

void expect_still_serving(const ServerFixture& server) {
  auto result = server.post("/v1/chat/completions", chat_body("hi"));
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200) << result->body;
}

TEST(HttpRoutes, UnknownRouteIs404WithAnErrorBody) {
  ServerFixture server;
  expect_error_body(server.client().Get("/v2/nothing"), 404, "not_found_error");
  expect_error_body(server.client().Post("/v1/chat", "{}", "application/json"), 404,
                    "not_found_error");
  expect_still_serving(server);
}

TEST(HttpRoutes, MalformedJsonIs400) {
  ServerFixture server;
  auto result =
      server.client().Post("/v1/chat/completions", "{\"messages\": [", "application/json");
  expect_error_body(result, 400, "invalid_request_error");
  expect_error_body(server.client().Post("/v1/completions", "[]", "application/json"), 400,
                    "invalid_request_error");
  expect_still_serving(server);
}

// Nested arrays `depth` deep, as JSON text.
std::string nested(int depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

TEST(HttpRoutes, JsonNestedTooDeepIs400) {
  ServerFixture server;
  // Deep enough to overflow the stack converting it to template values.
  for (const std::string field : {"chat_template_kwargs", "messages", "logit_bias", "tools"}) {
    const std::string body =
        "{\"model\": \"fake-model\", \"" + field + "\": " + nested(15000) + "}";
    auto result = server.client().Post("/v1/chat/completions", body, "application/json");
    expect_error_body(result, 400, "invalid_request_error");
    EXPECT_NE(result->body.find("nests deeper than 128 levels"), std::string::npos) << result->body;
  }
  // JSON text inside the body: a call's arguments, a schema.
  Json history = {{{"role", "user"}, {"content", "hi"}},
                  {{"role", "assistant"},
                   {"content", ""},
                   {"tool_calls",
                    {{{"id", "call_1"},
                      {"type", "function"},
                      {"function", {{"name", "f"}, {"arguments", nested(15000)}}}}}}}};
  auto result =
      server.post("/v1/chat/completions", {{"model", "fake-model"}, {"messages", history}});
  expect_error_body(result, 400, "invalid_request_error");
  EXPECT_EQ(Json::parse(result->body)["error"]["param"],
            "messages[1].tool_calls[0].function.arguments");
  result = server.post(
      "/v1/chat/completions",
      chat_body("hi", {{"response_format",
                        {{"type", "json_schema"},
                         {"json_schema", {{"name", "x"}, {"schema", nested(15000)}}}}}}));
  expect_error_body(result, 400, "invalid_request_error");
  // 128 levels is allowed (and still malformed here for other reasons, or fine).
  result =
      server.post("/v1/chat/completions",
                  chat_body("hi", {{"chat_template_kwargs", {{"x", Json::parse(nested(100))}}}}));
  EXPECT_EQ(result->status, 200) << result->body;
  expect_still_serving(server);
}

TEST(HttpRoutes, ANumberOutOfRangeIs400) {
  ServerFixture server;
  auto result = server.client().Post(
      "/v1/chat/completions",
      R"({"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "temperature": 1e999})",
      "application/json");
  expect_error_body(result, 400, "invalid_request_error");
  EXPECT_NE(result->body.find("not valid JSON"), std::string::npos) << result->body;
  expect_still_serving(server);
}

TEST(HttpRoutes, WrongTypesAre400NamingTheParam) {
  ServerFixture server;
  auto result = server.post("/v1/chat/completions", chat_body("hi", {{"temperature", "x"}}));
  expect_error_body(result, 400, "invalid_request_error");
  EXPECT_EQ(Json::parse(result->body)["error"]["param"], "temperature");
  result = server.post("/v1/chat/completions", chat_body("hi", {{"n", 3}}));
  expect_error_body(result, 400, "invalid_request_error");
  EXPECT_EQ(Json::parse(result->body)["error"]["param"], "n");
  expect_still_serving(server);
}

TEST(HttpRoutes, PromptLongerThanTheContextIs400) {
  ServerFixture server;  // the fake's context holds 64 tokens
  auto result = server.post("/v1/chat/completions", chat_body(std::string(100, 'a')));
  expect_error_body(result, 400, "invalid_request_error");
  EXPECT_EQ(Json::parse(result->body)["error"]["code"], "context_length_exceeded");
  expect_still_serving(server);
}

TEST(HttpRoutes, OversizedBodyIs413) {
  ServerConfig config;
  config.max_body_bytes = 2048;
  ServerFixture server({}, config);
  auto body = chat_body(std::string(8192, 'a')).dump();
  expect_error_body(server.client().Post("/v1/chat/completions", body, "application/json"), 413,
                    "invalid_request_error");
  expect_still_serving(server);
}

TEST(HttpRoutes, ApiKeyGuardsEveryRouteButHealth) {
  ServerConfig config;
  config.api_key = "sesame";
  ServerFixture server({}, config);
  expect_error_body(server.client().Get("/v1/models"), 401, "authentication_error");
  expect_error_body(server.client({{"Authorization", "Bearer wrong"}}).Get("/v1/models"), 401,
                    "authentication_error");
  expect_error_body(server.client({{"Authorization", "Bearer sesam"}}).Get("/metrics"), 401,
                    "authentication_error");
  auto allowed = server.client({{"Authorization", "Bearer sesame"}}).Get("/v1/models");
  ASSERT_TRUE(allowed);
  EXPECT_EQ(allowed->status, 200);
  auto health = server.client().Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST(HttpRoutes, CorsOnlyWhenAnOriginIsConfigured) {
  {
    ServerFixture server;
    auto result = server.client().Get("/v1/models");
    ASSERT_TRUE(result);
    EXPECT_FALSE(result->has_header("Access-Control-Allow-Origin"));
  }
  ServerConfig config;
  config.cors_origin = "http://localhost:3000";
  config.api_key = "k";
  ServerFixture server({}, config);
  auto preflight = server.client().Options("/v1/chat/completions");
  ASSERT_TRUE(preflight);
  EXPECT_EQ(preflight->status, 204);
  EXPECT_EQ(preflight->get_header_value("Access-Control-Allow-Origin"), "http://localhost:3000");
  EXPECT_NE(preflight->get_header_value("Access-Control-Allow-Headers").find("Authorization"),
            std::string::npos);
  auto result = server.client({{"Authorization", "Bearer k"}}).Get("/v1/models");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->get_header_value("Access-Control-Allow-Origin"), "http://localhost:3000");
}

TEST(HttpRoutes, HealthIs503WhileLoadingThen200) {
  ServerFixture server({}, {}, /*load_gate=*/true);
  auto loading = server.client().Get("/health");
  ASSERT_TRUE(loading);
  EXPECT_EQ(loading->status, 503);
  EXPECT_EQ(Json::parse(loading->body)["status"], "loading");
  expect_error_body(server.post("/v1/chat/completions", chat_body("hi")), 503, "unavailable_error");
  server.release_load();
  ASSERT_TRUE(
      ServerFixture::eventually([&] { return server.client().Get("/health")->status == 200; }));
  EXPECT_EQ(Json::parse(server.client().Get("/health")->body)["status"], "ok");
}

TEST(HttpRoutes, ModelsListsTheServedModel) {
  ServerFixture server;
  auto result = server.client().Get("/v1/models");
  ASSERT_TRUE(result);
  auto body = Json::parse(result->body);
  EXPECT_EQ(body["object"], "list");
  ASSERT_EQ(body["data"].size(), 1u);
  EXPECT_EQ(body["data"][0]["id"], "fake-model");
  EXPECT_EQ(body["data"][0]["object"], "model");
  EXPECT_EQ(body["data"][0]["context_length"], 64);
  EXPECT_EQ(server.client().Get("/v1/models/fake-model")->status, 200);
  expect_error_body(server.client().Get("/v1/models/other"), 404, "not_found_error");
}

TEST(HttpRoutes, TokenizeAndDetokenize) {
  ServerFixture server;
  auto tokens = server.post("/tokenize", {{"content", "ab"}});
  ASSERT_TRUE(tokens);
  EXPECT_EQ(Json::parse(tokens->body)["tokens"], Json({97, 98}));
  auto special = server.post("/tokenize", {{"content", "ab"}, {"add_special", true}});
  EXPECT_EQ(Json::parse(special->body)["tokens"], Json({94, 97, 98}));
  auto chat = server.post("/tokenize", chat_body("hi"));
  EXPECT_EQ(Json::parse(chat->body)["count"], 9);  // "user: hi\n"
  auto text = server.post("/detokenize", {{"tokens", {104, 105}}});
  ASSERT_TRUE(text);
  EXPECT_EQ(Json::parse(text->body)["content"], "hi");
  expect_error_body(server.post("/detokenize", {{"tokens", {1, 300}}}), 400,
                    "invalid_request_error");
  expect_error_body(server.post("/tokenize", {{"content", 5}}), 400, "invalid_request_error");
}

TEST(HttpRoutes, MetricsCountRequestsTokensAndErrors) {
  ServerFixture server;
  expect_still_serving(server);
  server.client().Get("/nowhere");
  // A request is counted once its response has been written, which the
  // client may see first: wait until both are counted.
  std::string text;
  ASSERT_TRUE(ServerFixture::eventually([&] {
    auto result = server.client().Get("/metrics");
    text = result && result->status == 200 ? result->body : "";
    return text.find("mlx_cpp_errors_total 1") != std::string::npos &&
           text.find("route=\"/v1/chat/completions\",status=\"200\"} 1") != std::string::npos;
  })) << text;
  EXPECT_NE(text.find("mlx_cpp_requests_total{route=\"/v1/chat/completions\",status=\"200\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("mlx_cpp_requests_total{route=\"other\",status=\"404\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("mlx_cpp_errors_total 1"), std::string::npos);
  EXPECT_NE(text.find("mlx_cpp_prompt_tokens_total 9"), std::string::npos);
  EXPECT_NE(text.find("mlx_cpp_completion_tokens_total 26"), std::string::npos);
  EXPECT_NE(text.find("mlx_cpp_time_to_first_token_seconds_count 1"), std::string::npos);
  EXPECT_NE(text.find("mlx_cpp_queue_depth 0"), std::string::npos);
  EXPECT_NE(text.find("# TYPE mlx_cpp_requests_total counter"), std::string::npos);
}

}  // namespace
}  // namespace mlx_cpp::server::testing
