#!/usr/bin/env python3
"""Unit goldens for the Jinja engine: one small template per statement,
filter, test, method and whitespace rule, rendered by jinja2 exactly as
transformers configures it (its compiled-template environment), so the
expected text comes from the oracle rather than from the test's author.

Writes DIR/cases.json: [{"name", "template", "variables", "output" | "error"}].
"""
import argparse
import json
import pathlib

from transformers.utils.chat_template_utils import _compile_jinja_template

DATA = {
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello", "tool_calls": [
            {"function": {"name": "f", "arguments": {"b": 1, "a": [1, 2.5, None, True]}}}]},
    ],
    "people": [{"name": "bob", "age": 30}, {"name": "Alice", "age": 25}, {"name": "carol", "age": 35}],
    "numbers": [3, 1, 2, 5, 4],
    "words": ["b", "A", "c", "a"],
    "mapping": {"b": 2, "a": 1, "C": 3},
    "text": "  Hello, World!  ",
    "nested": {"x": {"y": {"z": "deep"}}},
    "unicode": "héllo 😀 wörld",
    "empty": [],
    "flag": True,
    "nothing": None,
    "pi": 3.14159,
}

CASES = {
    # statements
    "if_elif_else": "{% for n in [1, 2, 3] %}{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %},{% endfor %}",
    "for_loop_variables": "{% for x in ['a','b','c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }}|{% endfor %}",
    "for_previtem_nextitem": "{% for x in numbers %}{{ loop.previtem is defined and loop.previtem }}-{{ loop.nextitem | default('end') }};{% endfor %}",
    "for_cycle": "{% for x in numbers %}{{ loop.cycle('odd', 'even') }} {% endfor %}",
    "for_else": "{% for x in empty %}{{ x }}{% else %}nothing{% endfor %}",
    "for_filter_condition": "{% for x in numbers if x > 2 %}{{ x }}:{{ loop.index }}/{{ loop.length }} {% endfor %}",
    "for_filtered_iterable": "{% for p in people | sort(attribute='age') %}{{ p.name }} {% endfor %}",
    "for_unpacking_items": "{% for k, v in mapping.items() %}{{ k }}={{ v }};{% endfor %}",
    "for_over_dict_keys": "{% for k in mapping %}{{ k }}{% endfor %}",
    "for_over_string": "{% for c in 'héy' %}[{{ c }}]{% endfor %}",
    "for_nested_loop_scope": "{% for a in [1,2] %}{% for b in [3,4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}",
    "break_continue": "{% for x in numbers %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}",
    "set_scoping_in_loop": "{% set c = 0 %}{% for i in [1,2] %}{{ c }}{% set c = c + 1 %}{{ c }}{% endfor %}{{ c }}",
    "set_in_if_leaks": "{% if true %}{% set z = 3 %}{% endif %}{{ z }}",
    "set_tuple_unpacking": "{% set a, b = 1, 2 %}{{ a }}{{ b }}",
    "set_block": "{% set greeting %}Hello {{ people[0].name }}!{% endset %}[{{ greeting }}]",
    "set_block_filtered": "{% set shout | upper | trim %}  quiet words  {% endset %}[{{ shout }}]",
    "namespace_in_loop": "{% set ns = namespace(total=0, seen=[]) %}{% for x in numbers %}{% set ns.total = ns.total + x %}{% endfor %}{{ ns.total }}",
    "namespace_from_dict": "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}",
    "namespace_underscore_rejected": "{% set ns = namespace() %}{% set ns._x = 1 %}",
    "macro_defaults_and_keywords": "{% macro tag(name, body='', close=true) %}<{{ name }}>{{ body }}{% if close %}</{{ name }}>{% endif %}{% endmacro %}{{ tag('a') }}{{ tag('b', 'x', close=false) }}",
    "macro_varargs_kwargs": "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}",
    "macro_too_many_arguments": "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}",
    "macro_recursion": "{% macro count(n) %}{{ n }}{% if n > 0 %}{{ count(n - 1) }}{% endif %}{% endmacro %}{{ count(4) }}",
    "macro_sees_later_globals": "{% macro m() %}{{ y }}{% endmacro %}{% set y = 5 %}{{ m() }}",
    "call_block": "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner {{ text | trim }}{% endcall %}",
    "call_block_with_arguments": "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) each(numbers) %}<{{ x }}>{% endcall %}",
    "filter_block": "{% filter upper %}shout {{ people[0].name }}{% endfilter %}",
    "raw_block": "{% raw %}{{ not rendered }} {% if %}{% endraw %}",
    "comments": "a{# comment #}b{#- trimmed -#}   c",
    "generation_block": "{% generation %}kept {{ 1 + 1 }}{% endgeneration %}",
    # whitespace control
    "trim_blocks": "{% if true %}\nline\n{% endif %}\nafter",
    "lstrip_blocks": "start\n    {% if true %}\n    indented\n    {% endif %}\nend",
    "lstrip_not_for_variables": "x\n    {{ 'v' }}\n",
    "strip_minus": "a   {{- 'b' -}}   c  {%- if true -%}  d  {%- endif -%}  e",
    "plus_keeps_whitespace": "a\n    {%+ if true %}b{% endif +%}\nc",
    "trailing_newline_removed": "text\n",
    "crlf_newlines": "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc",
    "comment_lstrip_and_trim": "x\n  {# note #}\ny",
    "inline_tags_no_lstrip": "a {% if true %} b {% endif %} c",
    # expressions
    "arithmetic": "{{ 7 + 2 }} {{ 7 - 2 }} {{ 7 * 2 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ 7 % 3 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 4 / 2 }}",
    "float_formatting": "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 1.5e-7 }} {{ -2.50 }} {{ 100.0 / 3 }}",
    "integer_float_mix": "{{ 1 + 1.0 }} {{ 3 * 1.5 }} {{ 10 // 4.0 }} {{ 2 ** 0.5 }}",
    "division_by_zero": "{{ 1 / 0 }}",
    "comparison_chain": "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ [1, 2] == [1, 2] }} {{ 2 >= 2 }} {{ 1 != 2 }}",
    "boolean_logic": "{{ true and 'x' }} {{ false or 'y' }} {{ not none }} {{ none or 0 or '' or 'last' }} {{ 0 and 1 }}",
    "in_operators": "{{ 'a' in 'cat' }} {{ 2 in numbers }} {{ 'a' in mapping }} {{ 9 not in numbers }} {{ 'x' in undefined_name }}",
    "ternary": "{{ 'yes' if flag else 'no' }} {{ 'yes' if nothing else 'no' }} [{{ 'only' if false }}]",
    "concatenation": "{{ 'a' ~ 1 ~ none ~ true ~ 2.5 ~ undefined_name }}",
    "string_plus_list_error": "{{ 'a' + [1] }}",
    "unary_minus_with_filter": "{{ -3 | abs }} {{ -(3) }} {{ +4 }}",
    "slicing": "{{ numbers[1:3] }} {{ numbers[::-1] }} {{ numbers[-2:] }} {{ 'abcdef'[1:4] }} {{ 'abcdef'[::2] }} {{ unicode[0:7] }} {{ numbers[:10] }} {{ 'abc'[-1] }}",
    "attribute_and_item_access": "{{ nested.x.y.z }} {{ nested['x']['y'].z }} {{ people[0]['name'] }} {{ people[-1].age }} {{ messages[2].tool_calls[0].function.name }}",
    "missing_key_is_undefined": "[{{ mapping.missing }}] {{ mapping.missing is defined }} {{ people[10] is defined }}",
    "attribute_of_undefined_errors": "{{ mapping.missing.deeper }}",
    "attribute_of_none_is_undefined": "[{{ nothing.x }}] {{ nothing.x is defined }}",
    "calling_undefined_errors": "{{ not_a_function() }}",
    "literals": "{{ [1, 'a', none, true, 1.0, {'k': (1, 2)}] }} {{ (1,) }} {{ () }} {{ {'a': [1, {'b': none}]} }} {{ 'it\\'s' }} {{ \"say \\\"hi\\\"\" }}",
    "string_repr_quotes": "{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'tab\\there', 'line\\nbreak', 'back\\\\slash'] }}",
    "string_literal_escapes": "{{ 'a\\tb\\nc\\u00e9\\x41\\\\' }}",
    "implicit_string_concat": "{{ 'abc' 'def' }}",
    "dict_literal_order": "{{ {'z': 1, 'a': 2, 'm': 3} }} {{ {'z': 1, 'a': 2} | tojson }}",
    "print_values": "{{ none }} {{ true }} {{ false }} {{ 42 }} {{ mapping }} {{ messages[0] }} {{ undefined_name }}|",
    "operator_precedence": "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ 1 + 2 ~ 'a' }} {{ not true == false }} {{ 10 - 2 - 3 }}",
    "concat_binds_tighter_than_plus": "{{ 'a' ~ 1 + 2 }}",
    # tests
    "tests_defined": "{{ mapping is defined }} {{ missing is defined }} {{ missing is undefined }} {{ nothing is none }} {{ nothing is not none }}",
    "tests_types": "{% for v in [1, 1.5, 'a', [1], {'a': 1}, true, none] %}{{ v is string }}{{ v is number }}{{ v is integer }}{{ v is float }}{{ v is boolean }}{{ v is mapping }}{{ v is iterable }}{{ v is sequence }}|{% endfor %}",
    "tests_true_false": "{{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }}",
    "tests_numbers": "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }}",
    "tests_comparisons": "{{ 1 is eq 1 }} {{ 1 is ne 2 }} {{ 1 is lt 2 }} {{ 2 is gt 1 }} {{ 1 is le 1 }} {{ 2 is ge 3 }} {{ 'a' is equalto 'a' }} {{ 2 is in [1, 2] }}",
    "tests_case": "{{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'aBc' is lower }} {{ '123' is lower }}",
    "tests_callable_sameas": "{{ range is callable }} {{ 'x' is callable }} {{ nothing is sameas none }} {{ flag is sameas true }} {{ numbers is sameas numbers }}",
    "tests_in_select": "{{ numbers | select('odd') | list }} {{ numbers | reject('even') | list }} {{ numbers | select('gt', 2) | list }} {{ [0, 1, '', 'a', none] | select | list }}",
    "unknown_test_rejected": "{{ 1 is frobnicated }}",
    "unknown_filter_rejected": "{{ 1 | frobnicate }}",
    "unknown_filter_in_if_not_run": "{% if false %}{{ 1 | frobnicate }}{% endif %}ok",
    "unknown_filter_in_if_run": "{% if true %}{{ 1 | frobnicate }}{% endif %}",
    # filters
    "filter_tojson": "{{ messages[2] | tojson }}|{{ 'é \"q\" \\n' | tojson }}|{{ [1.0, 2.5e-7, none, false] | tojson }}",
    "filter_tojson_indent": "{{ messages[2].tool_calls | tojson(indent=2) }}|{{ {'a': [], 'b': {}} | tojson(indent=4) }}",
    "filter_tojson_options": "{{ mapping | tojson(sort_keys=true) }}|{{ mapping | tojson(separators=(',', ':')) }}|{{ unicode | tojson(ensure_ascii=true) }}",
    "filter_tojson_undefined": "{{ missing | tojson }}",
    "filter_trim": "[{{ text | trim }}] [{{ 'xxhixx' | trim('x') }}] [{{ '\\n\\t a \\n' | trim }}]",
    "filter_length_count": "{{ numbers | length }} {{ 'héllo' | length }} {{ mapping | count }} {{ missing | length }}",
    "filter_case": "{{ 'hello world' | upper }} {{ 'HeLLo' | lower }} {{ 'hello big-world (yes)' | title }} {{ 'hELLO wORLD' | capitalize }} {{ 'ÉCOLE' | lower }}",
    "filter_replace": "{{ 'aaa' | replace('a', 'b') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'ab' | replace('', '-') }}",
    "filter_join": "{{ numbers | join(', ') }} {{ people | join('/', attribute='name') }} {{ ['a', none, 1] | join }}",
    "filter_first_last": "{{ numbers | first }} {{ numbers | last }} {{ 'abc' | first }} [{{ empty | first }}]",
    "filter_list": "{{ 'abc' | list }} {{ mapping | list }} {{ (1, 2) | list }}",
    "filter_map": "{{ people | map(attribute='name') | list }} {{ words | map('upper') | list }} {{ people | map(attribute='missing', default='?') | list }} {{ ['1', '2'] | map('int') | sum }}",
    "filter_selectattr": "{{ people | selectattr('age', 'gt', 26) | map(attribute='name') | join(',') }} {{ messages | selectattr('role', 'equalto', 'user') | list | length }} {{ messages | rejectattr('tool_calls') | list | length }} {{ messages | selectattr('tool_calls', 'defined') | list | length }}",
    "filter_items_dictsort": "{{ mapping | items | list }} {{ mapping | dictsort }} {{ mapping | dictsort(true) }} {{ mapping | dictsort(by='value', reverse=true) }}",
    "filter_default": "{{ missing | default('dflt') }} {{ nothing | default('dflt') }} {{ '' | default('dflt', true) }} {{ 0 | d('zero', boolean=true) }} {{ 'set' | default('x') }}",
    "filter_string_int_float": "{{ 42 | string }} {{ '42' | int }} {{ '4.7' | int }} {{ 'abc' | int }} {{ 'abc' | int(7) }} {{ '2.5' | float }} {{ 3 | float }} {{ 'x' | float }} {{ 3.9 | int }} {{ '0x1A' | int(0, 16) }}",
    "filter_round_abs": "{{ 2.5 | round }} {{ 3.5 | round }} {{ pi | round(2) }} {{ pi | round(1, 'floor') }} {{ pi | round(0, 'ceil') }} {{ -4 | abs }} {{ -1.5 | abs }}",
    "filter_unique_reverse": "{{ words | unique | list }} {{ words | unique(case_sensitive=true) | list }} {{ numbers | reverse | list }} {{ 'abc' | reverse }}",
    "filter_sort": "{{ words | sort }} {{ words | sort(case_sensitive=true) }} {{ numbers | sort(reverse=true) }} {{ people | sort(attribute='name') | map(attribute='name') | list }}",
    "filter_sum_min_max": "{{ numbers | sum }} {{ people | sum(attribute='age') }} {{ numbers | min }} {{ numbers | max }} {{ words | max }} {{ people | max(attribute='age') }} {{ [1.5, 2] | sum(start=10) }}",
    "filter_safe_escape": "{{ '<a href=\"x\">&\\'</a>' | safe }} {{ '<a href=\"x\">&\\'</a>' | escape }} {{ '<b>' | e }}",
    "filter_indent": "{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent('> ', blank=true) }}",
    "filter_round_python_rules": "{{ 2.675 | round(2) }} {{ 0.125 | round(2) }} {{ 0.375 | round(2) }} {{ 1234 | round(-2) }} {{ 1250 | round(-2) }} {{ -0.5 | round }} {{ 1.005 | round(2) }} {{ 5 | round }} {{ 0.15 | round(1, 'ceil') }} {{ 7 | round(0, 'floor') }}",
    "filter_wordcount_center": "{{ 'hello big  world, again' | wordcount }} [{{ 'hi' | center(7) }}] [{{ 'hi' | center(6) }}]",
    "filter_batch_slice": "{{ numbers | batch(2) | list }} {{ numbers | batch(2, 0) | list }} {{ numbers | slice(2) | list }}",
    "filter_truncate": "{{ 'the quick brown fox jumps' | truncate(12) }} {{ 'the quick brown fox jumps' | truncate(12, true) }} {{ 'short' | truncate(12) }}",
    "filter_format_attr": "{{ '%s is %d years' | format('bob', 30) }} {{ '%05.1f|%-4s|%x' | format(3.14159, 'a', 255) }} {{ mapping | attr('missing') is defined }}",
    "percent_operator": "{{ '%s-%s' % ('a', 'b') }} {{ '%d%%' % 50 }} {{ '%r' % 'q' }}",
    # methods
    "string_strip_methods": "[{{ text.strip() }}] [{{ text.lstrip() }}] [{{ text.rstrip() }}] [{{ 'xxhixx'.strip('x') }}] [{{ '<<a>>'.lstrip('<') }}] [{{ 'a\\n\\n'.rstrip('\\n') }}]",
    "string_split": "{{ 'a,b,,c'.split(',') }} {{ '  a  b c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'k=v=w'.rsplit('=', 1) }} {{ 'l1\\nl2\\r\\nl3'.splitlines() }}",
    "string_affixes": "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith(('x', 'h')) }} {{ 'hello'.endswith('x') }}",
    "string_case_methods": "{{ 'ab cd'.upper() }} {{ 'AB'.lower() }} {{ 'hello world-x'.title() }} {{ 'hello World'.capitalize() }}",
    "string_misc_methods": "{{ 'a-b-c'.replace('-', '+') }} {{ 'a-b-c'.replace('-', '+', 1) }} {{ '{} and {}'.format('x', 1) }} {{ '{0}{name}'.format('a', name='b') }} {{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'banana'.count('an') }} {{ ', '.join(['a', 'b']) }}",
    "dict_methods": "{{ mapping.get('a') }} {{ mapping.get('zz') }} {{ mapping.get('zz', 'd') }} {{ mapping.keys() | list }} {{ mapping.values() | list }} {{ mapping.items() | list }}",
    "list_methods": "{{ numbers.index(2) }} {{ [1, 1, 2].count(1) }}",
    "list_append_is_unsafe": "{% set l = [1] %}{{ l.append(2) }}",
    "list_pop_is_unsafe": "{% set l = [1] %}{{ l.pop() }}",
    "dict_update_is_unsafe": "{% set d = {} %}{{ d.update({'a': 1}) }}",
    # globals
    "range_function": "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {{ range(0) | list }}",
    "range_too_big": "{{ range(100001) | length }}",
    "dict_function": "{{ dict(a=1, b='x') }} {{ dict([('k', 'v')]) }} {{ dict(mapping, z=0) }}",
    "raise_exception": "{% if true %}{{ raise_exception('bad input: ' ~ 42) }}{% endif %}",
    "joiner": "{% set comma = joiner(', ') %}{% for x in numbers %}{{ comma() }}{{ x }}{% endfor %}",
    # errors
    "syntax_error_unclosed_if": "{% if true %}never closed",
    "syntax_error_bad_tag": "{% frobnicate %}",
    "syntax_error_unexpected_end": "{% for x in numbers %}{% endif %}",
    "syntax_error_expression": "{{ 1 + }}",
    "unicode_passthrough": "{{ unicode }} {{ unicode | upper }} {{ unicode | length }} {{ unicode[6] }}",
}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cases = []
    for name, template in CASES.items():
        record = {"name": name, "template": template, "variables": DATA}
        try:
            record["output"] = _compile_jinja_template(template).render(**DATA)
        except Exception as error:
            record["error"] = f"{type(error).__name__}: {error}"
        cases.append(record)
    (out / "cases.json").write_text(json.dumps(cases, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"{len(cases)} cases, {sum('error' in c for c in cases)} expected errors")


if __name__ == "__main__":
    main()
