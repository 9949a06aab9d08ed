// The chat page's routes: the embedded files with their types, a strict
// Content-Security-Policy, revalidation by ETag, no API key needed for the
// page itself (the API keeps needing it), and --no-webui.
#include <gtest/gtest.h>

#include "server/embedded_files.h"
#include "server_fixture.h"

namespace mlx_cpp::server::testing {
namespace {

TEST(WebPage, RootServesThePageWithAStrictPolicy) {
  ServerFixture server;
  auto page = server.client().Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("<script type=\"module\" src=\"/webui/app.js\">"), std::string::npos);
  const auto policy = page->get_header_value("Content-Security-Policy");
  EXPECT_NE(policy.find("default-src 'none'"), std::string::npos) << policy;
  EXPECT_NE(policy.find("script-src 'self';"), std::string::npos) << policy;
  EXPECT_EQ(policy.find("unsafe-inline"), std::string::npos) << policy;
  EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(page->get_header_value("Cache-Control"), "no-cache");
}

TEST(WebPage, EveryFileIsServedWithItsTypeAndBytes) {
  ServerFixture server;
  ASSERT_GE(web_page_files().size(), 8u);  // the page's own files and three libraries
  for (const auto& file : web_page_files()) {
    auto result = server.client().Get(std::string(file.url).c_str());
    ASSERT_TRUE(result) << file.url;
    EXPECT_EQ(result->status, 200) << file.url;
    EXPECT_EQ(result->get_header_value("Content-Type"), file.content_type) << file.url;
    EXPECT_EQ(result->body, file.bytes) << file.url;
    EXPECT_FALSE(file.bytes.empty()) << file.url;
  }
  for (const char* library : {"/webui/vendor/marked.min.js", "/webui/vendor/purify.min.js",
                              "/webui/vendor/highlight.min.js"}) {
    auto result = server.client().Get(library);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 200) << library;
    EXPECT_GT(result->body.size(), 10000u) << library;
  }
}

TEST(WebPage, AMatchingETagGets304) {
  ServerFixture server;
  auto first = server.client().Get("/webui/app.js");
  ASSERT_TRUE(first);
  const auto tag = first->get_header_value("ETag");
  ASSERT_EQ(tag.size(), 18u) << tag;  // a quoted 64-bit hash
  auto again = server.client({{"If-None-Match", tag}}).Get("/webui/app.js");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_TRUE(again->body.empty());
  auto stale = server.client({{"If-None-Match", "\"0000000000000000\""}}).Get("/webui/app.js");
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 200);
  EXPECT_NE(server.client().Get("/webui/style.css")->get_header_value("ETag"), tag);
}

TEST(WebPage, UnknownFilesAre404WithAnErrorBody) {
  ServerFixture server;
  for (const char* path : {"/webui/nothing.js", "/webui/../CMakeLists.txt", "/webui/vendor/"}) {
    auto result = server.client().Get(path);
    ASSERT_TRUE(result) << path;
    EXPECT_EQ(result->status, 404) << path;
    EXPECT_NE(result->body.find("not_found_error"), std::string::npos) << path;
  }
}

TEST(WebPage, ThePageNeedsNoKeyButTheApiStillDoes) {
  ServerConfig config;
  config.api_key = "sesame";
  ServerFixture server({}, config);
  EXPECT_EQ(server.client().Get("/")->status, 200);
  EXPECT_EQ(server.client().Get("/webui/app.js")->status, 200);
  EXPECT_EQ(server.client().Get("/v1/models")->status, 401);
  EXPECT_EQ(server.client().Get("/metrics")->status, 401);
}

TEST(WebPage, NoWebUiServesNoPage) {
  ServerConfig config;
  config.web_page = false;
  config.api_key = "sesame";
  ServerFixture server({}, config);
  EXPECT_EQ(server.client().Get("/webui/app.js")->status, 401);  // no exemption either
  auto page = server.client({{"Authorization", "Bearer sesame"}}).Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 404);
}

TEST(WebPage, ModelsSayWhatRequestsMaySpeculateWith) {
  ServerFixture server;
  auto body = Json::parse(server.client().Get("/v1/models")->body);
  const auto& speculative = body["data"][0]["speculative"];
  EXPECT_EQ(speculative["sources"], Json::array({"prompt-lookup"}));  // the fake has no draft
  EXPECT_EQ(speculative["default"], "none");
}

}  // namespace
}  // namespace mlx_cpp::server::testing
