// jinja2's filters over sequences and mappings: first/last, join, map,
// select/reject(attr), sort, dictsort, unique, min/max, sum, batch, slice.
#include <algorithm>
#include <charconv>
#include <unordered_map>

#include "template/builtins.h"
#include "template/filter_helpers.h"
#include "template/python_text.h"
#include "template/string_functions.h"
#include "template/value_operations.h"

namespace mlx_cpp::jinja {
namespace {

// Sort keys fold case unless case_sensitive is set, as jinja2's ignore_case.
Value sort_key(const Value& item, const std::string& attribute, bool case_sensitive) {
  Value key = attribute.empty() ? item : get_attribute_path(item, attribute);
  if (!case_sensitive && key.is_string()) return Value(to_lower(key.as_string()));
  return key;
}

std::string attribute_argument(const CallArguments& arguments, size_t position) {
  Value attribute = optional_argument(arguments, position, "attribute", Value());
  return attribute.is_none() ? "" : attribute.to_output();
}

Value filter_first(const Value& input, const CallArguments&) {
  std::vector<Value> items = iterate_values(input);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value filter_last(const Value& input, const CallArguments&) {
  std::vector<Value> items = iterate_values(input);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value filter_join(const Value& input, const CallArguments& arguments) {
  std::string separator = optional_argument(arguments, 0, "d", Value("")).to_output();
  std::string attribute = attribute_argument(arguments, 1);
  std::string out;
  bool first = true;
  for (const auto& item : iterate_values(input)) {
    std::string text = (attribute.empty() ? item : get_attribute_path(item, attribute)).to_output();
    ensure_room_for(out.size() + separator.size() + text.size());
    if (!first) out += separator;
    first = false;
    out += text;
  }
  return Value(out);
}

Value filter_map(const Value& input, const CallArguments& arguments) {
  std::vector<Value> out;
  Value attribute = optional_argument(arguments, SIZE_MAX, "attribute", Value());
  if (!attribute.is_none()) {
    Value fallback = optional_argument(arguments, SIZE_MAX, "default", Value::undefined(""));
    for (const auto& item : iterate_values(input)) {
      Value value = get_attribute_path(item, attribute.to_output());
      out.push_back(value.is_undefined() && !fallback.is_undefined() ? fallback : value);
    }
    return Value::list(std::move(out));
  }
  if (arguments.positional.empty()) throw TemplateFailure("map requires a filter argument");
  std::string filter = arguments.positional[0].to_output();
  if (!is_known_filter(filter)) throw TemplateFailure("no filter named '" + filter + "'");
  CallArguments rest{{arguments.positional.begin() + 1, arguments.positional.end()},
                     arguments.keyword};
  for (const auto& item : iterate_values(input)) out.push_back(apply_filter(filter, item, rest));
  return Value::list(std::move(out));
}

// select / reject / selectattr / rejectattr share one loop.
Value select_items(const Value& input, const CallArguments& arguments, bool keep_matches,
                   bool by_attribute) {
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    if (arguments.positional.empty()) throw TemplateFailure("selectattr requires an attribute");
    attribute = arguments.positional[next++].to_output();
  }
  std::string test;
  if (next < arguments.positional.size()) test = arguments.positional[next++].to_output();
  if (!test.empty() && !is_known_test(test)) throw TemplateFailure("no test named '" + test + "'");
  CallArguments test_arguments{
      {arguments.positional.begin() + static_cast<long>(next), arguments.positional.end()},
      arguments.keyword};
  std::vector<Value> out;
  for (const auto& item : iterate_values(input)) {
    Value subject = by_attribute ? get_attribute_path(item, attribute) : item;
    bool matches = test.empty() ? subject.truthy() : apply_test(test, subject, test_arguments);
    if (matches == keep_matches) out.push_back(item);
  }
  return Value::list(std::move(out));
}

std::vector<Value> sorted_items(std::vector<Value> items, const std::string& attribute,
                                bool case_sensitive, bool reverse) {
  std::vector<Value> keys;
  for (const auto& item : items) keys.push_back(sort_key(item, attribute, case_sensitive));
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return reverse ? values_less(keys[b], keys[a]) : values_less(keys[a], keys[b]);
  });
  std::vector<Value> out;
  for (size_t index : order) out.push_back(items[index]);
  return out;
}

Value filter_sort(const Value& input, const CallArguments& arguments) {
  bool reverse = optional_argument(arguments, 0, "reverse", Value(false)).truthy();
  bool case_sensitive = optional_argument(arguments, 1, "case_sensitive", Value(false)).truthy();
  return Value::list(sorted_items(iterate_values(input), attribute_argument(arguments, 2),
                                  case_sensitive, reverse));
}

Value filter_items(const Value& input, const CallArguments&) {
  if (input.is_undefined()) return Value::list();
  if (!input.is_dict() || input.is_namespace()) {
    throw TemplateFailure("Can only get item pairs from a mapping.");
  }
  std::vector<Value> pairs;
  for (const auto& [key, value] : input.as_dict().entries) {
    pairs.push_back(Value::list({key, value}, true));
  }
  return Value::list(std::move(pairs));
}

Value filter_dictsort(const Value& input, const CallArguments& arguments) {
  bool case_sensitive = optional_argument(arguments, 0, "case_sensitive", Value(false)).truthy();
  std::string by = optional_argument(arguments, 1, "by", Value("key")).to_output();
  bool reverse = optional_argument(arguments, 2, "reverse", Value(false)).truthy();
  if (by != "key" && by != "value")
    throw TemplateFailure("You can only sort by either 'key' or 'value'");
  if (!input.is_dict())
    throw TemplateFailure("dictsort: " + input.type_name() + " is not a mapping");
  std::vector<Value> pairs = filter_items(input, {}).as_list().items;
  return Value::list(sorted_items(pairs, by == "key" ? "0" : "1", case_sensitive, reverse));
}

Value filter_unique(const Value& input, const CallArguments& arguments) {
  bool case_sensitive = optional_argument(arguments, 0, "case_sensitive", Value(false)).truthy();
  std::string attribute = attribute_argument(arguments, 1);
  std::vector<Value> seen;
  std::vector<Value> out;
  for (const auto& item : iterate_values(input)) {
    Value key = sort_key(item, attribute, case_sensitive);
    bool duplicate = std::any_of(seen.begin(), seen.end(),
                                 [&](const Value& other) { return values_equal(other, key); });
    if (duplicate) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value min_or_max(const Value& input, const CallArguments& arguments, bool want_max) {
  bool case_sensitive = optional_argument(arguments, 0, "case_sensitive", Value(false)).truthy();
  std::string attribute = attribute_argument(arguments, 1);
  std::vector<Value> items = iterate_values(input);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = sort_key(items[0], attribute, case_sensitive);
  for (size_t i = 1; i < items.size(); ++i) {
    Value key = sort_key(items[i], attribute, case_sensitive);
    if (want_max ? values_less(best_key, key) : values_less(key, best_key)) {
      best = i;
      best_key = key;
    }
  }
  return items[best];
}

Value filter_sum(const Value& input, const CallArguments& arguments) {
  std::string attribute = attribute_argument(arguments, 0);
  Value total = optional_argument(arguments, 1, "start", Value(0));
  for (const auto& item : iterate_values(input)) {
    total = arithmetic("+", total, attribute.empty() ? item : get_attribute_path(item, attribute));
  }
  return total;
}

Value filter_reverse(const Value& input, const CallArguments&) {
  if (input.is_string()) {
    std::u32string text = utf8_decode(input.as_string());
    std::reverse(text.begin(), text.end());
    return Value(utf8_encode(text));
  }
  std::vector<Value> items = iterate_values(input);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value filter_batch(const Value& input, const CallArguments& arguments) {
  int64_t size = required_argument(arguments, 0, "linecount", "batch").as_integer();
  Value fill = optional_argument(arguments, 1, "fill_with", Value());
  if (size <= 0) throw TemplateFailure("batch: linecount must be positive");
  std::vector<Value> batches;
  std::vector<Value> current;
  for (const auto& item : iterate_values(input)) {
    current.push_back(item);
    if (static_cast<int64_t>(current.size()) == size) {
      batches.push_back(Value::list(std::move(current)));
      current.clear();
    }
  }
  if (!current.empty()) {
    if (!fill.is_none())
      ensure_room_for(bytes_times(static_cast<size_t>(size) - current.size(), stored_bytes(fill)));
    while (!fill.is_none() && static_cast<int64_t>(current.size()) < size) current.push_back(fill);
    batches.push_back(Value::list(std::move(current)));
  }
  return Value::list(std::move(batches));
}

Value filter_slice(const Value& input, const CallArguments& arguments) {
  int64_t slices = required_argument(arguments, 0, "slices", "slice").as_integer();
  Value fill = optional_argument(arguments, 1, "fill_with", Value());
  if (slices <= 0) throw TemplateFailure("slice: slices must be positive");
  ensure_room_for(bytes_times(static_cast<size_t>(slices), sizeof(Value) + sizeof(ListObject)));
  std::vector<Value> items = iterate_values(input);
  auto length = static_cast<int64_t>(items.size());
  int64_t per_slice = length / slices;
  int64_t with_extra = length % slices;
  int64_t offset = 0;
  std::vector<Value> out;
  for (int64_t slice = 0; slice < slices; ++slice) {
    int64_t start = offset + slice * per_slice;
    if (slice < with_extra) ++offset;
    int64_t end = offset + (slice + 1) * per_slice;
    std::vector<Value> part(items.begin() + start, items.begin() + end);
    if (!fill.is_none() && slice >= with_extra) part.push_back(fill);
    out.push_back(Value::list(std::move(part)));
  }
  return Value::list(std::move(out));
}

using Filter = Value (*)(const Value&, const CallArguments&);

const std::unordered_map<std::string, Filter>& sequence_filters() {
  static const std::unordered_map<std::string, Filter> filters = {
      {"first", filter_first},
      {"last", filter_last},
      {"join", filter_join},
      {"map", filter_map},
      {"select",
       [](const Value& v, const CallArguments& a) { return select_items(v, a, true, false); }},
      {"reject",
       [](const Value& v, const CallArguments& a) { return select_items(v, a, false, false); }},
      {"selectattr",
       [](const Value& v, const CallArguments& a) { return select_items(v, a, true, true); }},
      {"rejectattr",
       [](const Value& v, const CallArguments& a) { return select_items(v, a, false, true); }},
      {"sort", filter_sort},
      {"items", filter_items},
      {"dictsort", filter_dictsort},
      {"unique", filter_unique},
      {"min", [](const Value& v, const CallArguments& a) { return min_or_max(v, a, false); }},
      {"max", [](const Value& v, const CallArguments& a) { return min_or_max(v, a, true); }},
      {"sum", filter_sum},
      {"reverse", filter_reverse},
      {"batch", filter_batch},
      {"slice", filter_slice},
      {"list", [](const Value& v, const CallArguments&) { return Value::list(iterate_values(v)); }},
  };
  return filters;
}

}  // namespace

Value optional_argument(const CallArguments& arguments, size_t position, const std::string& name,
                        Value fallback) {
  const Value* found = arguments.get(position, name);
  return found ? *found : fallback;
}

Value required_argument(const CallArguments& arguments, size_t position, const std::string& name,
                        const std::string& function) {
  const Value* found = arguments.get(position, name);
  if (!found) throw TemplateFailure(function + "() missing required argument '" + name + "'");
  return *found;
}

Value get_attribute_path(const Value& object, const std::string& attribute) {
  Value current = object;
  for (const std::string& part : python_split(attribute, std::string("."), -1)) {
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    int64_t index = 0;
    // A number too large for an index indexes nothing.
    if (numeric && std::from_chars(part.data(), part.data() + part.size(), index).ec != std::errc())
      return Value::undefined("no item " + part);
    current = numeric ? get_item(current, Value(index)) : get_item(current, Value(part));
    if (current.is_undefined()) return current;
  }
  return current;
}

bool is_sequence_filter(const std::string& name) {
  return sequence_filters().count(name) > 0;
}

Value apply_sequence_filter(const std::string& name, const Value& input,
                            const CallArguments& arguments) {
  auto found = sequence_filters().find(name);
  if (found == sequence_filters().end()) throw TemplateFailure("no filter named '" + name + "'");
  return found->second(input, arguments);
}

}  // namespace mlx_cpp::jinja
