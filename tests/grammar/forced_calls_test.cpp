// Forced tool calls (tool_choice required or named) in each format that
// has a grammar for them, compiled by xgrammar against a real vocabulary:
// SmolLM2's tokenizer with every format's markers added as special tokens,
// as the models of those families have them.
//
// Two directions. Too loose: random walks through the grammar's masks
// (uniform over the allowed tokens) must each parse, through the format's
// own parser, as calls to allowed tools with arguments valid against their
// schema and no content. Too strict: a call written as the model family
// writes it must be accepted token by token.
#include <gtest/gtest.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <unordered_set>

#include "chat/forced_tool_calls.h"
#include "chat/output_parser.h"
#include "chat/tool_call_formats.h"
#include "grammar/token_grammar.h"
#include "io/model_cache.h"
#include "tokenizer/tokenizer.h"

namespace mlx_cpp {
namespace {

namespace mx = mlx::core;
using Json = nlohmann::ordered_json;

const std::vector<std::string> kMarkers = {"[TOOL_CALLS]",
                                           "[ARGS]",
                                           "[CALL_ID]",
                                           "<|tool_calls_section_begin|>",
                                           "<|tool_calls_section_end|>",
                                           "<|tool_call_begin|>",
                                           "<|tool_call_argument_begin|>",
                                           "<|tool_call_end|>",
                                           "<｜tool▁calls▁begin｜>",
                                           "<｜tool▁calls▁end｜>",
                                           "<｜tool▁call▁begin｜>",
                                           "<｜tool▁call▁end｜>",
                                           "<｜tool▁sep｜>",
                                           "<|start|>",
                                           "<|end|>",
                                           "<|message|>",
                                           "<|channel|>",
                                           "<|constrain|>",
                                           "<|return|>",
                                           "<|call|>",
                                           "<|START_ACTION|>",
                                           "<|END_ACTION|>",
                                           "<tool_call>",
                                           "</tool_call>",
                                           "<arg_key>",
                                           "</arg_key>",
                                           "<arg_value>",
                                           "</arg_value>"};

// SmolLM2's tokenizer files with the markers appended as special tokens.
struct Vocabulary {
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<grammar::GrammarVocabulary> grammar;
  int eos = 0;
  int size = 0;
};

Vocabulary& vocabulary() {
  static Vocabulary built = [] {
    const auto model = resolve_model_path("smollm2-135m-instruct");
    // One directory per process: the test runner starts the tests in parallel.
    const auto directory = std::filesystem::temp_directory_path() /
                           ("mlx_cpp_marked_tokenizer_" + std::to_string(getpid()));
    std::filesystem::create_directories(directory);
    std::filesystem::copy_file(model / "tokenizer_config.json", directory / "tokenizer_config.json",
                               std::filesystem::copy_options::overwrite_existing);
    std::ifstream in(model / "tokenizer.json");
    auto tokenizer_json = nlohmann::json::parse(in);
    int next = 0;
    for (const auto& [token, id] : tokenizer_json["model"]["vocab"].items())
      next = std::max(next, id.get<int>() + 1);
    for (const auto& added : tokenizer_json["added_tokens"])
      next = std::max(next, added["id"].get<int>() + 1);
    for (const auto& marker : kMarkers)
      tokenizer_json["added_tokens"].push_back({{"id", next++},
                                                {"content", marker},
                                                {"single_word", false},
                                                {"lstrip", false},
                                                {"rstrip", false},
                                                {"normalized", false},
                                                {"special", true}});
    std::ofstream(directory / "tokenizer.json") << tokenizer_json.dump();
    Vocabulary result;
    result.tokenizer = Tokenizer::from_directory(directory);
    std::filesystem::remove_all(directory);
    result.size = next;
    result.eos = *result.tokenizer->eos_token_id();
    std::unordered_set<int> markers;
    for (const auto& marker : kMarkers) markers.insert(*result.tokenizer->token_to_id(marker));
    result.grammar = std::make_unique<grammar::GrammarVocabulary>(
        *result.tokenizer, tokenizer_json.dump(), result.size, std::vector<int>{result.eos},
        markers);
    return result;
  }();
  return built;
}

Json weather_tool() {
  return {{"type", "function"},
          {"function",
           {{"name", "get_weather"},
            {"parameters",
             {{"type", "object"},
              {"properties",
               {{"city", {{"type", "string"}, {"enum", {"Paris", "Rome"}}}},
                {"days", {{"type", "integer"}, {"minimum", 1}, {"maximum", 7}}}}},
              {"required", {"city", "days"}},
              {"additionalProperties", false}}}}}};
}

Json time_tool() {
  return {{"type", "function"},
          {"function",
           {{"name", "get_time"},
            {"parameters",
             {{"type", "object"},
              {"properties", {{"zone", {{"type", "string"}, {"enum", {"UTC", "CET"}}}}}},
              {"required", {"zone"}},
              {"additionalProperties", false}}}}}};
}

struct Case {
  std::string name;           // test label
  std::string format;         // tool-call format
  std::string rendered_call;  // what the template writes for a call (picks variants)
  std::string model_call;     // a call to get_weather as the family writes it
};

std::vector<Case> cases() {
  return {
      {"hermes", "hermes", "",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": "
       "3}}\n</tool_call>"},
      {"llama3_json", "llama3_json", "",
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 3}}"},
      {"mistral_list", "mistral", "[TOOL_CALLS][{\"name\": \"f\"}]",
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": "
       "3}}]"},
      {"mistral_named", "mistral", "[TOOL_CALLS]f[ARGS]{}",
       "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\", \"days\": 3}"},
      {"kimi_k2", "kimi_k2", "",
       "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
       "<|tool_call_argument_begin|>{\"city\": \"Paris\", \"days\": 3}<|tool_call_end|>"
       "<|tool_calls_section_end|>"},
      {"deepseek_v3", "deepseek_v3", "<｜tool▁call▁begin｜>function<｜tool▁sep｜>f",
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
       "{\"city\": \"Paris\", \"days\": 3}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
      {"deepseek_v31", "deepseek_v3", "<｜tool▁call▁begin｜>f<｜tool▁sep｜>{}",
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\", "
       "\"days\": 3}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
      {"deepseek_v32", "deepseek_v3", "<｜DSML｜invoke name=\"f\">",
       "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter "
       "name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n<｜DSML｜parameter name=\"days\" "
       "string=\"false\">3</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>"},
      {"harmony", "harmony", "",
       "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": "
       "\"Paris\", \"days\": 3}<|call|>"},
      {"command_r7b", "command_r", "<|START_ACTION|>[]<|END_ACTION|>",
       "<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": "
       "{\"city\": \"Paris\", \"days\": 3}}]<|END_ACTION|>"},
      {"command_r", "command_r", "Action: ```json\n[]\n```",
       "Action: ```json\n[{\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", "
       "\"parameters\": {\"city\": \"Paris\", \"days\": 3}}]\n```"},
      {"qwen3_coder", "qwen3_coder", "",
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
       "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"},
      {"pythonic", "pythonic", "[get_weather(city=\"Paris\")]",
       "[get_weather(city=\"Paris\", days=3)]"},
      {"pythonic_lfm2", "pythonic", "<|tool_call_start|>[get_weather(city=\"Paris\")]",
       "<|tool_call_start|>[get_weather(city=\"Paris\", days=3)]<|tool_call_end|>"},
      {"glm45", "glm45", "",
       "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
       "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"},
  };
}

void PrintTo(const Case& c, std::ostream* out) {
  *out << c.name;
}

chat::OutputFormat output_format(const Case& c) {
  chat::OutputFormat format;
  format.tool_calls = &chat::tool_call_format(c.format);
  format.rendered_call = c.rendered_call;
  return format;
}

std::shared_ptr<const grammar::CompiledGrammar> compile(const Case& c, const Json& tools,
                                                        const chat::ForcedCalls& forced) {
  auto tag = chat::forced_calls_structural_tag(output_format(c), tools, forced);
  if (!tag) throw std::runtime_error(c.name + ": no grammar");
  return vocabulary().grammar->compile({grammar::GrammarSpec::Kind::structural_tag, *tag});
}

std::vector<int> allowed_ids(grammar::TokenConstraint& constraint) {
  auto mask = mx::astype(constraint.allowed(), mx::uint8);
  mx::eval(mask);
  std::vector<int> ids;
  const auto* bits = mask.data<uint8_t>();
  for (int id = 0; id < static_cast<int>(mask.size()); ++id)
    if (bits[id]) ids.push_back(id);
  return ids;
}

// Tokens drawn uniformly from each step's mask, ending at the stop token
// once the grammar allows it (half the time, or when nothing else is).
std::vector<int> random_walk(std::shared_ptr<const grammar::CompiledGrammar> compiled,
                             unsigned seed, int limit = 600) {
  grammar::TokenConstraint constraint(std::move(compiled));
  std::mt19937 random(seed);
  std::vector<int> ids;
  const int eos = vocabulary().eos;
  for (int step = 0; step < limit && !constraint.finished(); ++step) {
    auto allowed = allowed_ids(constraint);
    if (allowed.empty()) throw std::runtime_error("the grammar allows nothing");
    const bool can_stop = std::find(allowed.begin(), allowed.end(), eos) != allowed.end();
    int id;
    if (can_stop && (allowed.size() == 1 || random() % 2 == 0)) {
      id = eos;
    } else {
      std::erase(allowed, eos);
      id = allowed[random() % allowed.size()];
    }
    if (!constraint.accept(id)) throw std::runtime_error("a masked-in token was refused");
    if (id != eos) ids.push_back(id);
  }
  if (!constraint.finished()) throw std::runtime_error("the walk did not end");
  return ids;
}

// "" when the arguments satisfy the tool's schema (enum strings, integer
// ranges, required keys, no others).
std::string schema_errors(const Json& tools, const chat::ToolCall& call) {
  const Json* schema = nullptr;
  for (const auto& tool : tools)
    if (tool["function"]["name"] == call.name) schema = &tool["function"]["parameters"];
  if (!schema) return "unknown tool " + call.name;
  auto arguments = Json::parse(call.arguments, nullptr, false);
  if (!arguments.is_object()) return "arguments are not an object: " + call.arguments;
  for (const auto& key : (*schema)["required"])
    if (!arguments.contains(key.get<std::string>())) return "missing " + key.dump();
  for (const auto& [key, value] : arguments.items()) {
    if (!(*schema)["properties"].contains(key)) return "unknown key " + key;
    const auto& property = (*schema)["properties"][key];
    if (property.contains("enum") && std::find(property["enum"].begin(), property["enum"].end(),
                                               value) == property["enum"].end())
      return key + " not in its enum: " + value.dump();
    if (property["type"] == "integer" &&
        (!value.is_number_integer() || value < property["minimum"] || value > property["maximum"]))
      return key + " out of range: " + value.dump();
  }
  return "";
}

chat::ParsedMessage parse(const Case& c, const Json& tools, const std::string& text) {
  chat::OutputOptions options;
  options.parse_tool_calls = true;
  options.tools.tools = tools;
  chat::OutputParser parser(output_format(c), options);
  parser.feed(text);
  parser.finish();
  return parser.message();
}

std::string trimmed(std::string text) {
  const auto begin = text.find_first_not_of(" \n\t");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \n\t") - begin + 1);
}

class ForcedCalls : public ::testing::TestWithParam<Case> {};

TEST_P(ForcedCalls, EveryPathTheGrammarAllowsParsesAsValidCalls) {
  const auto& c = GetParam();
  const Json tools = Json::array({weather_tool(), time_tool()});
  for (bool several : {false, true}) {
    chat::ForcedCalls forced;
    forced.several = several && c.format != "harmony";  // harmony's <|call|> ends the turn
    auto compiled = compile(c, tools, forced);
    for (unsigned seed = 0; seed < 12; ++seed) {
      const auto ids = random_walk(compiled, seed);
      const auto text = vocabulary().tokenizer->decode(std::vector<TokenId>(ids.begin(), ids.end()),
                                                       /*skip_special_tokens=*/false);
      const auto message = parse(c, tools, text);
      SCOPED_TRACE(c.name + (several ? " several" : " one") + ", seed " + std::to_string(seed) +
                   ": " + text);
      EXPECT_EQ(trimmed(message.content), "");
      ASSERT_FALSE(message.tool_calls.empty());
      if (!forced.several) {
        EXPECT_EQ(message.tool_calls.size(), 1u);
      }
      for (const auto& call : message.tool_calls) EXPECT_EQ(schema_errors(tools, call), "");
    }
  }
}

TEST_P(ForcedCalls, ANamedToolIsTheOnlyOneWritten) {
  const auto& c = GetParam();
  const Json tools = Json::array({weather_tool(), time_tool()});
  chat::ForcedCalls forced;
  forced.only_tool = "get_time";
  forced.several = false;
  auto compiled = compile(c, tools, forced);
  for (unsigned seed = 0; seed < 6; ++seed) {
    const auto ids = random_walk(compiled, seed);
    const auto text =
        vocabulary().tokenizer->decode(std::vector<TokenId>(ids.begin(), ids.end()), false);
    const auto message = parse(c, tools, text);
    ASSERT_EQ(message.tool_calls.size(), 1u) << text;
    EXPECT_EQ(message.tool_calls[0].name, "get_time") << text;
    EXPECT_EQ(schema_errors(tools, message.tool_calls[0]), "") << text;
  }
}

TEST_P(ForcedCalls, TheFamilysOwnCallIsAccepted) {
  const auto& c = GetParam();
  const Json tools = Json::array({weather_tool(), time_tool()});
  chat::ForcedCalls forced;
  forced.several = false;
  grammar::TokenConstraint constraint(compile(c, tools, forced));
  const auto ids = vocabulary().tokenizer->encode(c.model_call, /*add_special_tokens=*/false);
  std::string accepted;
  for (int id : ids) {
    ASSERT_TRUE(constraint.accept(id))
        << c.name << ": refused " << vocabulary().tokenizer->decode({id}, false) << " after "
        << accepted;
    accepted += vocabulary().tokenizer->decode({id}, false);
  }
  EXPECT_TRUE(constraint.accept(vocabulary().eos)) << c.name << ": the call is not complete";
  // And the format reads it back.
  const auto message = parse(c, tools, c.model_call);
  ASSERT_EQ(message.tool_calls.size(), 1u);
  EXPECT_EQ(Json::parse(message.tool_calls[0].arguments), Json({{"city", "Paris"}, {"days", 3}}));
}

TEST_P(ForcedCalls, TheFirstTokenCannotBeProse) {
  const auto& c = GetParam();
  grammar::TokenConstraint constraint(
      compile(c, Json::array({weather_tool()}), chat::ForcedCalls{std::nullopt, false}));
  const auto allowed = allowed_ids(constraint);
  for (const std::string word : {"Hello", "The", " I", "Sure"}) {
    const auto ids = vocabulary().tokenizer->encode(word, false);
    EXPECT_EQ(std::find(allowed.begin(), allowed.end(), ids.front()), allowed.end())
        << c.name << " allows " << word;
  }
  EXPECT_EQ(std::find(allowed.begin(), allowed.end(), vocabulary().eos), allowed.end());
}

INSTANTIATE_TEST_SUITE_P(Formats, ForcedCalls, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

TEST(ForcedCallsGrammar, PythonOptionalArgumentsMayBeLeftOut) {
  Case pythonic{"pythonic", "pythonic", "", ""};
  const Json tool = {{"type", "function"},
                     {"function",
                      {{"name", "search"},
                       {"parameters",
                        {{"type", "object"},
                         {"properties",
                          {{"query", {{"type", "string"}}},
                           {"limit", {{"type", "integer"}}},
                           {"exact", {{"type", "boolean"}}}}},
                         {"required", {"query"}}}}}}};
  for (const std::string call :
       {"[search(query=\"cats\")]", "[search(query=\"a \\\"b\\\"\", exact=True)]",
        "[search(query=\"x\", limit=-5, exact=False)]"}) {
    grammar::TokenConstraint constraint(
        compile(pythonic, Json::array({tool}), chat::ForcedCalls{std::nullopt, false}));
    bool accepted = true;
    for (int id : vocabulary().tokenizer->encode(call, false))
      accepted = accepted && constraint.accept(id);
    EXPECT_TRUE(accepted && constraint.accept(vocabulary().eos)) << call;
  }
  for (const std::string call :
       {"[search(limit=3)]", "[search(query=3)]", "[search(exact=True, query=\"x\")]"}) {
    grammar::TokenConstraint constraint(
        compile(pythonic, Json::array({tool}), chat::ForcedCalls{std::nullopt, false}));
    bool accepted = true;
    for (int id : vocabulary().tokenizer->encode(call, false))
      accepted = accepted && constraint.accept(id);
    EXPECT_FALSE(accepted && constraint.accept(vocabulary().eos)) << call << " was accepted";
  }
}

}  // namespace
}  // namespace mlx_cpp
