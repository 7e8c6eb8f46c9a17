// Python semantics of Jinja values (private to engine/chat): printing, comparison,
// arithmetic, slicing on code points, and the built-in filters, tests and methods.
#pragma once

#include "arbor/jinja.h"

#include <string>
#include <string_view>

namespace arbor::jinja {

std::string type_name(const Value& v);

// str(v) as Jinja prints it ({{ v }}): undefined prints nothing, None "None", True "True".
std::string to_str(const Value& v);
// Python's repr(v), used inside printed lists and dicts.
std::string repr(const Value& v);

bool equals(const Value& a, const Value& b);
// Python's <, for numbers and strings (and lists); throws for other types.
bool less(const Value& a, const Value& b);
Value binary(std::string_view op, const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);

size_t length(const Value& v);
Value index(const Value& target, const Value& key);
Value slice(const Value& target, const Value& start, const Value& stop, const Value& step);
// Items a for loop visits: list elements, dict keys, string characters.
Array iterate(const Value& v);

// Callbacks the filters that take a test name (select, selectattr) use.
bool apply_test(std::string_view name, const Value& v, const std::vector<Value>& args);
Value apply_filter(std::string_view name, const Value& v, CallArgs& args);
// A bound method such as s.strip or d.items, or undefined when `name` is none.
Value method(const Value& target, const std::string& name);

} // namespace arbor::jinja
