// What only our engine defines: error messages that name the template line,
// limits that stop runaway templates, and the ChatTemplate API's chat
// preprocessing (checked against transformers' rules stated in its source).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "io/error.h"
#include "template/chat_template.h"
#include "template/model_chat_template.h"

namespace mlx_cpp {
namespace {

using Json = nlohmann::ordered_json;

std::string error_of(const std::string& source, const Json& variables = Json::object(),
                     TemplateLimits limits = {}) {
  try {
    ChatTemplate(source, limits).render_raw(variables);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(TemplateErrors, SyntaxErrorNamesItsLine) {
  EXPECT_EQ(error_of("line one\n{% if true %}\n{{ 1 + }}\n{% endif %}")
                .rfind("template error at line 3: ", 0),
            0u);
  EXPECT_EQ(error_of("a\nb\n{% for x in y %}never closed").rfind("template error at line 3: ", 0),
            0u);
  EXPECT_NE(error_of("{% for x in y %}{% endif %}").find("endif"), std::string::npos);
}

TEST(TemplateErrors, RaiseExceptionCarriesMessageAndLine) {
  std::string message = error_of("ok\n\n{{ raise_exception('Only user and assistant roles') }}");
  EXPECT_EQ(message, "template error at line 3: Only user and assistant roles");
}

TEST(TemplateErrors, UndefinedCallAndAttributeNameTheVariable) {
  EXPECT_EQ(error_of("\n{{ missing_function() }}"),
            "template error at line 2: 'missing_function' is undefined");
  EXPECT_NE(error_of("{{ a.b.c }}", Json{{"a", Json::object()}}).find("no attribute 'b'"),
            std::string::npos);
}

TEST(TemplateErrors, ErrorInsideMacroNamesTheMacroLine) {
  std::string source = "{% macro m() %}\n{{ 1 // 0 }}\n{% endmacro %}\n\n{{ m() }}";
  EXPECT_EQ(error_of(source).rfind("template error at line 2: ", 0), 0u) << error_of(source);
}

TEST(TemplateErrors, UnterminatedPiecesAreSyntaxErrors) {
  EXPECT_NE(error_of("{{ 'open string }}"), "");
  EXPECT_NE(error_of("{# open comment"), "");
  EXPECT_NE(error_of("{{ x "), "");
  EXPECT_NE(error_of("{% raw %}no end"), "");
  EXPECT_NE(error_of("{{ x[ }}"), "");
  EXPECT_NE(error_of("{% set %}"), "");
  EXPECT_NE(error_of("{% macro %}{% endmacro %}"), "");
}

TEST(TemplateLimits, InfiniteMacroRecursionStops) {
  std::string message = error_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}");
  EXPECT_NE(message.find("nested deeper than"), std::string::npos) << message;
}

TEST(TemplateLimits, OutputSizeIsBounded) {
  TemplateLimits limits;
  limits.max_output_bytes = 1000;
  std::string message =
      error_of("{% for i in range(10000) %}xxxxxxxxxx{% endfor %}", Json::object(), limits);
  EXPECT_NE(message.find("output exceeds 1000 bytes"), std::string::npos) << message;
  message = error_of("{{ 'x' * 5000 }}", Json::object(), limits);
  EXPECT_NE(message.find("exceeds"), std::string::npos) << message;
}

TEST(TemplateLimits, LoopIterationsAreBounded) {
  TemplateLimits limits;
  limits.max_loop_iterations = 50;
  std::string message =
      error_of("{% for a in range(10) %}{% for b in range(10) %}{% endfor %}{% endfor %}",
               Json::object(), limits);
  EXPECT_NE(message.find("loop iterations"), std::string::npos) << message;
}

std::string rendered(const std::string& source) {
  return ChatTemplate(source).render_raw(Json::object());
}

TEST(TemplateLimits, IntegerArithmeticIsPythonsOrAnError) {
  // Python's results where they fit in 64 bits.
  EXPECT_EQ(rendered("{{ 7 // -2 }} {{ 7 % -2 }} {{ -7 % 3 }} {{ 5 % -1 }}"), "-4 -1 2 0");
  EXPECT_EQ(rendered("{{ (-9223372036854775807 - 1) % -1 }}"), "0");
  EXPECT_EQ(rendered("{{ 2 ** 62 }} {{ (-2) ** 63 }} {{ 3 ** 0 }}"),
            "4611686018427387904 -9223372036854775808 1");
  EXPECT_EQ(rendered("{{ 1 ** 9223372036854775807 }} {{ (-1) ** 9223372036854775807 }}"), "1 -1");
  // Where they do not: an error, not a SIGFPE, a wrapped value or no end.
  for (const std::string expression :
       {"(-9223372036854775807 - 1) // -1", "9223372036854775807 + 1", "-9223372036854775807 - 2",
        "4611686018427387904 * 2", "2 ** 63", "2 ** 9223372036854775807"}) {
    const auto message = error_of("{{ " + expression + " }}");
    EXPECT_NE(message.find("integer overflow"), std::string::npos) << expression << ": " << message;
  }
}

TEST(TemplateLimits, RangesAndIndexesAtTheEdgesOf64Bits) {
  EXPECT_EQ(rendered("{{ range(9223372036854775806, 9223372036854775807) | list }}"),
            "[9223372036854775806]");
  EXPECT_EQ(rendered("{{ range(0, -9223372036854775807 - 1, -4611686018427387904) | list }}"),
            "[0, -4611686018427387904]");
  EXPECT_NE(error_of("{{ range(-9223372036854775807 - 1, 9223372036854775807) | length }}")
                .find("Range too big"),
            std::string::npos);
  // An attribute path with a number too large for an index finds nothing.
  EXPECT_EQ(rendered("{{ [[1, 2]] | map(attribute='99999999999999999999') | list | length }}"),
            "1");
}

TEST(TemplateLimits, DeeplyNestedExpressionIsRejectedNotCrashing) {
  std::string source = "{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}";
  EXPECT_NE(error_of(source).find("nested too deeply"), std::string::npos);
  std::string blocks;
  for (int i = 0; i < 5000; ++i) blocks += "{% if true %}";
  EXPECT_NE(error_of(blocks).find("nested too deeply"), std::string::npos);
}

TEST(ChatTemplateApi, RenderSetsTransformersDefaults) {
  ChatTemplate chat_template(
      "{{ tools is none }}|{{ documents is none }}|{{ add_generation_prompt }}|{{ messages | "
      "length }}");
  EXPECT_EQ(chat_template.render(Json::object()), "True|True|False|0");
  EXPECT_EQ(chat_template.render(Json{{"add_generation_prompt", true}, {"tools", Json::array()}}),
            "False|True|True|0");
}

TEST(ChatTemplateApi, NullMessageKeysAreDropped) {
  ChatTemplate chat_template("{% for m in messages %}{{ m.content is defined }}{% endfor %}");
  Json messages = Json::array({Json{{"role", "assistant"}, {"content", nullptr}}});
  EXPECT_EQ(chat_template.render(Json{{"messages", messages}}), "False");
}

TEST(ChatTemplateApi, ReasoningIsAliasedUnderBothNames) {
  // transformers: {"thinking": r, **message, "reasoning_content": r}
  Json message = Json{{"role", "assistant"}, {"reasoning", "why"}, {"content", "x"}};
  Json normalized = normalize_chat_messages(Json::array({message}));
  EXPECT_EQ(
      normalized[0].dump(),
      R"({"thinking":"why","role":"assistant","reasoning":"why","content":"x","reasoning_content":"why"})");
}

TEST(ChatTemplateApi, BadMessagesAreUserErrors) {
  ChatTemplate chat_template("{{ messages }}");
  EXPECT_THROW(chat_template.render(Json{{"messages", "not a list"}}), Error);
  EXPECT_THROW(chat_template.render(Json{{"messages", Json::array({1})}}), Error);
  EXPECT_THROW(chat_template.render(Json::array()), Error);
}

TEST(ChatTemplateApi, CompiledTemplateRendersConcurrently) {
  ChatTemplate chat_template(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}"
      "{{ ns.n }}:{{ messages[-1].content }}");
  std::vector<std::string> results(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      Json messages = Json::array();
      for (size_t k = 0; k <= i; ++k)
        messages.push_back(Json{{"role", "user"}, {"content", std::to_string(k)}});
      results[i] = chat_template.render(Json{{"messages", messages}});
    });
  }
  for (auto& thread : threads) thread.join();
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i], std::to_string(i + 1) + ":" + std::to_string(i));
  }
}

TEST(ChatTemplateApi, StrftimeNowFormatsTheCurrentDate) {
  std::string year = ChatTemplate("{{ strftime_now('%Y') }}").render_raw(Json::object());
  ASSERT_EQ(year.size(), 4u);
  EXPECT_GE(std::stoi(year), 2024);
}

class ModelDirectory : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::path(MLX_CPP_BINARY_DIR) / "template_model_directory_test";
    std::filesystem::remove_all(directory_);
    std::filesystem::create_directories(directory_);
  }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(directory_ / name, std::ios::binary) << text;
  }
  std::filesystem::path directory_;
};

TEST_F(ModelDirectory, ListFormPicksDefaultAndReadsTokenContent) {
  write("tokenizer_config.json",
        R"({"bos_token": {"content": "<B>"}, "eos_token": "<E>", "chat_template": [)"
        R"({"name": "rag", "template": "r"}, {"name": "default", "template": "d"}]})");
  ModelChatTemplate loaded = load_model_chat_template(directory_);
  EXPECT_EQ(loaded.source, "d");
  EXPECT_EQ(loaded.special_tokens.dump(), R"({"bos_token":"<B>","eos_token":"<E>"})");
}

TEST_F(ModelDirectory, JinjaFileWinsOverConfig) {
  write("tokenizer_config.json", R"({"chat_template": "from config"})");
  write("chat_template.jinja", "from file");
  EXPECT_EQ(load_model_chat_template(directory_).source, "from file");
}

TEST_F(ModelDirectory, MissingOrMalformedTemplatesAreUserErrors) {
  EXPECT_THROW(load_model_chat_template(directory_), Error);  // empty directory
  write("tokenizer_config.json", R"({"chat_template": [{"name": "rag", "template": "r"}]})");
  EXPECT_THROW(load_model_chat_template(directory_), Error);  // no "default"
  write("tokenizer_config.json", R"({"bos_token": "<s>"})");
  EXPECT_THROW(load_model_chat_template(directory_), Error);  // no template at all
  write("tokenizer_config.json", "{not json");
  EXPECT_THROW(load_model_chat_template(directory_), Error);
}

}  // namespace
}  // namespace mlx_cpp
