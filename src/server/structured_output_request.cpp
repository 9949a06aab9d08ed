#include "server/structured_output_request.h"

#include "server/api_error.h"
#include "server/request_fields.h"

namespace mlx_cpp::server {
namespace {

using Kind = grammar::GrammarSpec::Kind;

// A schema given as an object or as JSON text; a schema must be an object
// (or true, which allows any JSON).
std::string schema_text(const nlohmann::ordered_json& schema, const std::string& param) {
  nlohmann::ordered_json parsed = schema;
  if (schema.is_string()) {
    refuse_deep_json(schema.get_ref<const std::string&>(), "'" + param + "'", param);
    parsed = nlohmann::ordered_json::parse(schema.get<std::string>(), nullptr, false);
    if (parsed.is_discarded()) throw invalid_request("'" + param + "' is not valid JSON", param);
  }
  if (parsed.is_boolean() && parsed.get<bool>()) return "{}";
  if (!parsed.is_object())
    throw invalid_request("'" + param + "' must be a JSON schema object", param);
  return parsed.dump();
}

std::string string_field(const nlohmann::ordered_json& value, const std::string& param) {
  if (!value.is_string() || value.get<std::string>().empty())
    throw invalid_request("'" + param + "' must be a non-empty string", param);
  return value.get<std::string>();
}

grammar::GrammarSpec choice_spec(const nlohmann::ordered_json& value, const std::string& param) {
  if (!value.is_array() || value.empty())
    throw invalid_request("'" + param + "' must be a non-empty list of strings", param);
  grammar::GrammarSpec spec{Kind::choice};
  for (const auto& choice : value) spec.choices.push_back(string_field(choice, param));
  return spec;
}

std::optional<grammar::GrammarSpec> from_response_format(const nlohmann::ordered_json& body) {
  auto it = body.find("response_format");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object() || !it->contains("type") || !(*it)["type"].is_string())
    throw invalid_request("'response_format' must be {\"type\": text | json_object | json_schema}",
                          "response_format");
  const std::string type = (*it)["type"];
  if (type == "text") return std::nullopt;
  if (type == "json_object") return grammar::GrammarSpec{Kind::json_object};
  if (type == "structural_tag") {
    // xgrammar's own description of tagged output, as vLLM accepts it.
    if (!it->contains("format") || !(*it)["format"].is_object())
      throw invalid_request("'response_format.format' must be a structural tag object",
                            "response_format.format");
    return grammar::GrammarSpec{Kind::structural_tag, it->dump()};
  }
  if (type != "json_schema")
    throw invalid_request(
        "'response_format.type' must be text, json_object, json_schema or structural_tag",
        "response_format.type");
  auto format = it->find("json_schema");
  if (format == it->end() || !format->is_object() || !format->contains("schema"))
    throw invalid_request("'response_format.json_schema.schema' is required",
                          "response_format.json_schema");
  grammar::GrammarSpec spec{Kind::json_schema};
  spec.text = schema_text((*format)["schema"], "response_format.json_schema.schema");
  spec.strict = format->value("strict", false) == true;
  return spec;
}

// vLLM: {"structured_outputs": {"json" | "regex" | "choice" | "grammar" |
// "json_object": ...}}, or the same as top-level guided_* fields.
// `prefix` is "guided_" for the top-level fields (part of their names) or
// "structured_outputs." for the object's (part of the reported name only).
std::optional<grammar::GrammarSpec> from_vllm(const nlohmann::ordered_json& fields,
                                              const nlohmann::ordered_json& body,
                                              const std::string& prefix) {
  const bool in_object = &fields != &body;
  std::optional<grammar::GrammarSpec> spec;
  auto take = [&](const char* name, auto make) {
    const std::string key = in_object ? std::string(name) : prefix + name;
    auto it = fields.find(key);
    if (it == fields.end() || it->is_null()) return;
    if (spec) throw invalid_request("give one structured output form, not several", prefix + name);
    spec = make(*it, prefix + name);
  };
  take("json", [](const auto& value, const std::string& param) {
    grammar::GrammarSpec json{Kind::json_schema};
    json.text = schema_text(value, param);
    return json;
  });
  take("regex", [](const auto& value, const std::string& param) {
    return grammar::GrammarSpec{Kind::regex, string_field(value, param)};
  });
  take("choice", choice_spec);
  take("grammar", [](const auto& value, const std::string& param) {
    return grammar::GrammarSpec{Kind::ebnf, string_field(value, param)};
  });
  take("json_object", [](const auto& value, const std::string& param) {
    if (value != true) throw invalid_request("'" + param + "' must be true", param);
    return grammar::GrammarSpec{Kind::json_object};
  });
  return spec;
}

// llama.cpp: "grammar" (GBNF, which xgrammar's EBNF reads) or "json_schema".
std::optional<grammar::GrammarSpec> from_llama_cpp(const nlohmann::ordered_json& body) {
  std::optional<grammar::GrammarSpec> spec;
  if (auto it = body.find("grammar"); it != body.end() && !it->is_null())
    spec = grammar::GrammarSpec{Kind::ebnf, string_field(*it, "grammar")};
  if (auto it = body.find("json_schema"); it != body.end() && !it->is_null()) {
    if (spec) throw invalid_request("give one structured output form, not several", "json_schema");
    spec = grammar::GrammarSpec{Kind::json_schema, schema_text(*it, "json_schema")};
  }
  return spec;
}

}  // namespace

std::optional<StructuredOutput> parse_structured_output(const nlohmann::ordered_json& body) {
  std::vector<std::pair<std::optional<grammar::GrammarSpec>, std::string>> forms = {
      {from_response_format(body), "response_format"},
      {from_vllm(body, body, "guided_"), "guided_*"},
      {from_llama_cpp(body), "grammar"}};
  auto structured = body.find("structured_outputs");
  if (structured != body.end() && !structured->is_null()) {
    if (!structured->is_object())
      throw invalid_request("'structured_outputs' must be an object", "structured_outputs");
    forms.push_back({from_vllm(*structured, body, "structured_outputs."), "structured_outputs"});
  }
  std::optional<StructuredOutput> found;
  for (auto& [form, field] : forms) {
    if (!form) continue;
    if (found)
      throw invalid_request(
          "give one structured output form (response_format, structured_outputs, guided_*, "
          "grammar or json_schema), not several");
    found = StructuredOutput{std::move(*form), field};
  }
  return found;
}

}  // namespace mlx_cpp::server
