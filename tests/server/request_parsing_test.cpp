// Validation of chat and completion request bodies: every field's type and
// range, defaults from the model, and the names errors point at.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/request_fields.h"

namespace mlx_cpp::server {
namespace {

using Json = nlohmann::ordered_json;

ModelInfo test_model() {
  ModelInfo model;
  model.id = "test-model";
  model.context_size = 128;
  model.vocab_size = 1000;
  model.defaults.sampler.temperature = 0.7f;
  model.defaults.sampler.top_p = 0.9f;
  return model;
}

Json chat(Json extra = Json::object()) {
  Json body = {{"model", "anything"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  for (auto& [key, value] : extra.items()) body[key] = value;
  return body;
}

// The 400 ApiError's param for `body`, or "" when it parses.
std::string rejected_param(const Json& body, Endpoint endpoint = Endpoint::chat) {
  try {
    if (endpoint == Endpoint::chat)
      parse_chat_request(body, test_model());
    else
      parse_completion_request(body, test_model());
  } catch (const ApiError& error) {
    EXPECT_EQ(error.status(), 400);
    return error.param().empty() ? "<none>" : error.param();
  }
  return "";
}

TEST(RequestParsing, OmittedFieldsTakeTheModelDefaults) {
  auto request = parse_chat_request(chat(), test_model());
  EXPECT_FLOAT_EQ(request.text.options.sampler.temperature, 0.7f);
  EXPECT_FLOAT_EQ(request.text.options.sampler.top_p, 0.9f);
  EXPECT_FALSE(request.max_tokens_given);
  EXPECT_EQ(request.text.options.max_tokens, 128);
  EXPECT_FALSE(request.stream);
  EXPECT_FALSE(request.text.logprobs);
}

TEST(RequestParsing, SamplingFieldsAreRead) {
  auto request = parse_chat_request(chat({{"temperature", 0},
                                          {"top_p", 0.5},
                                          {"top_k", 40},
                                          {"min_p", 0.05},
                                          {"seed", 7},
                                          {"presence_penalty", -0.5},
                                          {"frequency_penalty", 1.5},
                                          {"repetition_penalty", 1.1},
                                          {"logit_bias", {{"12", -100}, {"7", 5.5}}},
                                          {"max_completion_tokens", 9},
                                          {"stop", "END"}}),
                                    test_model());
  const auto& options = request.text.options;
  EXPECT_EQ(options.sampler.temperature, 0.0f);
  EXPECT_FLOAT_EQ(options.sampler.top_p, 0.5f);
  EXPECT_EQ(options.sampler.top_k, 40);
  EXPECT_FLOAT_EQ(options.sampler.min_p, 0.05f);
  EXPECT_EQ(options.sampler.seed, 7u);
  EXPECT_FLOAT_EQ(*options.penalties.presence_penalty, -0.5f);
  EXPECT_FLOAT_EQ(*options.penalties.frequency_penalty, 1.5f);
  EXPECT_FLOAT_EQ(*options.penalties.repetition_penalty, 1.1f);
  EXPECT_EQ(options.penalties.logit_bias.at(12), -100.0f);
  EXPECT_EQ(options.penalties.logit_bias.at(7), 5.5f);
  EXPECT_EQ(options.max_tokens, 9);
  EXPECT_TRUE(request.max_tokens_given);
  EXPECT_EQ(request.text.stop, std::vector<std::string>{"END"});
}

TEST(RequestParsing, MaxCompletionTokensWinsOverMaxTokens) {
  auto request =
      parse_chat_request(chat({{"max_tokens", 20}, {"max_completion_tokens", 5}}), test_model());
  EXPECT_EQ(request.text.options.max_tokens, 5);
  EXPECT_EQ(parse_chat_request(chat({{"max_tokens", 20}}), test_model()).text.options.max_tokens,
            20);
}

TEST(RequestParsing, TopPZeroMeansTheSingleMostLikelyToken) {
  auto request = parse_chat_request(chat({{"top_p", 0}}), test_model());
  EXPECT_EQ(request.text.options.sampler.top_k, 1);
  EXPECT_EQ(request.text.options.sampler.top_p, 1.0f);
}

TEST(RequestParsing, WrongTypesNameTheField) {
  EXPECT_EQ(rejected_param(chat({{"temperature", "hot"}})), "temperature");
  EXPECT_EQ(rejected_param(chat({{"max_tokens", 1.5}})), "max_tokens");
  EXPECT_EQ(rejected_param(chat({{"stream", "yes"}})), "stream");
  EXPECT_EQ(rejected_param(chat({{"stop", 3}})), "stop");
  EXPECT_EQ(rejected_param(chat({{"stop", {"a", 1}}})), "stop");
  EXPECT_EQ(rejected_param(chat({{"seed", "1"}})), "seed");
  EXPECT_EQ(rejected_param(chat({{"logit_bias", {1, 2}}})), "logit_bias");
  EXPECT_EQ(rejected_param(chat({{"stream_options", true}})), "stream_options");
  EXPECT_EQ(rejected_param(chat({{"model", 5}})), "model");
  EXPECT_EQ(rejected_param(chat({{"chat_template_kwargs", "x"}})), "chat_template_kwargs");
}

TEST(RequestParsing, OutOfRangeValuesAreRejected) {
  EXPECT_EQ(rejected_param(chat({{"temperature", -0.1}})), "temperature");
  EXPECT_EQ(rejected_param(chat({{"temperature", 2.5}})), "temperature");
  EXPECT_EQ(rejected_param(chat({{"top_p", 1.01}})), "top_p");
  EXPECT_EQ(rejected_param(chat({{"top_k", 1000}})), "top_k");
  EXPECT_EQ(rejected_param(chat({{"min_p", 2}})), "min_p");
  EXPECT_EQ(rejected_param(chat({{"max_tokens", 0}})), "max_tokens");
  EXPECT_EQ(rejected_param(chat({{"max_tokens", 129}})), "max_tokens");
  EXPECT_EQ(rejected_param(chat({{"presence_penalty", 3}})), "presence_penalty");
  EXPECT_EQ(rejected_param(chat({{"logit_bias", {{"1000", 1}}}})), "logit_bias");
  EXPECT_EQ(rejected_param(chat({{"logit_bias", {{"abc", 1}}}})), "logit_bias");
  EXPECT_EQ(rejected_param(chat({{"logit_bias", {{"5", 101}}}})), "logit_bias");
  EXPECT_EQ(rejected_param(chat({{"top_logprobs", 21}, {"logprobs", true}})), "top_logprobs");
}

TEST(RequestParsing, UnsupportedChoicesAreRefusedClearly) {
  EXPECT_EQ(rejected_param(chat({{"n", 2}})), "n");
  EXPECT_EQ(rejected_param(chat({{"response_format", {{"type", "xml"}}}})), "response_format.type");
  EXPECT_EQ(rejected_param(chat({{"response_format", {{"type", "json_schema"}}}})),
            "response_format.json_schema");
  EXPECT_EQ(rejected_param(chat({{"top_logprobs", 2}})), "top_logprobs");  // without logprobs
  EXPECT_EQ(rejected_param(chat({{"n", 1}, {"response_format", {{"type", "text"}}}})), "");
}

TEST(RequestParsing, MessagesMustBeWellFormed) {
  EXPECT_EQ(rejected_param({{"messages", Json::array()}}), "messages");
  EXPECT_EQ(rejected_param({{"messages", "hi"}}), "messages");
  EXPECT_EQ(rejected_param({{"messages", {{{"content", "hi"}}}}}), "messages[0].role");
  EXPECT_EQ(rejected_param({{"messages", {{{"role", "user"}}}}}), "messages[0].content");
  EXPECT_EQ(rejected_param({{"messages", {{{"role", "user"}, {"content", 5}}}}}),
            "messages[0].content");
  Json image = {
      {{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", {{"url", "x"}}}}}}}};
  EXPECT_EQ(rejected_param({{"messages", image}}), "messages[0].content");
}

TEST(RequestParsing, TextContentPartsAreJoined) {
  Json parts = {{{"type", "text"}, {"text", "Hello, "}}, {{"type", "text"}, {"text", "world"}}};
  auto request = parse_chat_request({{"messages", {{{"role", "user"}, {"content", parts}}}},
                                     {"chat_template_kwargs", {{"enable_thinking", false}}}},
                                    test_model());
  EXPECT_EQ(request.messages[0]["content"], "Hello, world");
  EXPECT_EQ(request.template_kwargs["enable_thinking"], false);
}

TEST(RequestParsing, ChatLogprobs) {
  auto request = parse_chat_request(chat({{"logprobs", true}, {"top_logprobs", 3}}), test_model());
  EXPECT_TRUE(request.text.logprobs);
  EXPECT_EQ(request.text.top_logprobs, 3);
}

TEST(RequestParsing, CompletionPrompts) {
  auto text = parse_completion_request({{"prompt", "Once"}, {"logprobs", 2}}, test_model());
  EXPECT_EQ(text.prompt_text, "Once");
  EXPECT_FALSE(text.prompt_is_ids);
  EXPECT_TRUE(text.text.logprobs);
  EXPECT_EQ(text.text.top_logprobs, 2);
  auto ids = parse_completion_request({{"prompt", {1, 2, 3}}}, test_model());
  EXPECT_TRUE(ids.prompt_is_ids);
  EXPECT_EQ(ids.prompt_ids, (std::vector<int>{1, 2, 3}));
  auto batch = parse_completion_request({{"prompt", {"only one"}}}, test_model());
  EXPECT_EQ(batch.prompt_text, "only one");
  EXPECT_EQ(rejected_param(Json{{"max_tokens", 3}}, Endpoint::completion), "prompt");
  EXPECT_EQ(rejected_param({{"prompt", {1, 1000}}}, Endpoint::completion), "prompt");
  EXPECT_EQ(rejected_param({{"prompt", {"a", "b"}}}, Endpoint::completion), "prompt");
  EXPECT_EQ(rejected_param({{"prompt", "x"}, {"echo", true}}, Endpoint::completion), "echo");
  EXPECT_EQ(rejected_param({{"prompt", "x"}, {"logprobs", 6}}, Endpoint::completion), "logprobs");
}

TEST(RequestParsing, StreamOptions) {
  auto request = parse_chat_request(
      chat({{"stream", true}, {"stream_options", {{"include_usage", true}}}}), test_model());
  EXPECT_TRUE(request.stream);
  EXPECT_TRUE(request.include_usage);
}

TEST(RequestFields, MalformedBodiesAre400) {
  EXPECT_THROW(parse_json_body("{\"messages\": ["), ApiError);
  EXPECT_THROW(parse_json_body("[1, 2]"), ApiError);
  EXPECT_THROW(parse_json_body(""), ApiError);
  EXPECT_NO_THROW(parse_json_body("{}"));
}

TEST(RequestFields, WholeFloatsCountAsIntegers) {
  EXPECT_EQ(optional_integer({{"n", 3.0}}, "n"), 3);
  EXPECT_EQ(optional_integer({{"n", nullptr}}, "n"), std::nullopt);
  EXPECT_THROW(optional_integer({{"n", 3.5}}, "n"), ApiError);
  EXPECT_THROW(optional_integer({{"n", true}}, "n"), ApiError);
}

}  // namespace
}  // namespace mlx_cpp::server

namespace mlx_cpp::server {
namespace {

TEST(RequestParsing, StructuredOutputFormsBecomeOneGrammar) {
  auto schema = parse_chat_request(
      chat({{"response_format",
             {{"type", "json_schema"},
              {"json_schema",
               {{"name", "x"}, {"schema", {{"type", "object"}}}, {"strict", true}}}}}}),
      test_model());
  ASSERT_TRUE(schema.grammar);
  EXPECT_EQ(schema.grammar->kind, grammar::GrammarSpec::Kind::json_schema);
  EXPECT_EQ(Json::parse(schema.grammar->text), Json({{"type", "object"}}));
  EXPECT_TRUE(schema.grammar->strict);
  EXPECT_EQ(schema.grammar_field, "response_format");
  auto choice =
      parse_chat_request(chat({{"structured_outputs", {{"choice", {"a", "b"}}}}}), test_model());
  ASSERT_TRUE(choice.grammar);
  EXPECT_EQ(choice.grammar->choices, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(choice.grammar_field, "structured_outputs");
  auto regex = parse_chat_request(chat({{"guided_regex", "[0-9]+"}}), test_model());
  ASSERT_TRUE(regex.grammar);
  EXPECT_EQ(regex.grammar->kind, grammar::GrammarSpec::Kind::regex);
  auto gbnf = parse_chat_request(chat({{"grammar", "root ::= \"x\""}}), test_model());
  ASSERT_TRUE(gbnf.grammar);
  EXPECT_EQ(gbnf.grammar->kind, grammar::GrammarSpec::Kind::ebnf);
  EXPECT_FALSE(
      parse_chat_request(chat({{"response_format", {{"type", "text"}}}}), test_model()).grammar);
  EXPECT_EQ(rejected_param(chat({{"grammar", "x"}, {"guided_regex", "y"}})), "<none>");
  EXPECT_EQ(rejected_param(chat({{"structured_outputs", {{"choice", Json::array()}}}})),
            "structured_outputs.choice");
}

}  // namespace
}  // namespace mlx_cpp::server
