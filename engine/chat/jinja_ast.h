// The syntax tree of a parsed Jinja template (private to engine/chat).
#pragma once

#include "arbor/jinja.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace arbor::jinja {

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Expr {
    enum class Kind {
        Literal,    // value
        Name,       // name
        Attr,       // args[0].name
        Item,       // args[0][args[1]]
        Slice,      // args[0][args[1]:args[2]:args[3]] (null parts allowed)
        Call,       // args[0](args[1..], kwargs)
        Filter,     // args[0] | name(args[1..], kwargs)
        Test,       // args[0] is [not] name(args[1..])
        Unary,      // op args[0]: "-", "+", "not"
        Binary,     // args[0] op args[1]: arithmetic, comparison, "~", "in", "not in"
        And,
        Or,
        Conditional,  // args[0] if args[1] else args[2] (args[2] may be null)
        List,
        Tuple,
        Dict,       // args alternate key, value
    };
    Kind kind;
    Value value;
    std::string name;  // Name, Attr, Filter, Test, operator of Unary/Binary
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    bool negated = false;  // Test: "is not"
    int line = 0;
};

struct Stmt;
using Body = std::vector<std::shared_ptr<const Stmt>>;

struct Stmt {
    enum class Kind { Text, Output, If, For, Set, SetBlock, Macro, Break, Continue };
    Kind kind;
    std::string text;                                // Text; Macro name
    ExprPtr expr;                                    // Output; For iterable; Set value
    std::vector<std::pair<ExprPtr, Body>> branches;  // If: conditions with bodies
    Body body;                                       // For, SetBlock, Macro
    Body else_body;                                  // If, For
    std::vector<std::string> names;                  // For targets; Set/SetBlock target names; Macro params
    std::vector<ExprPtr> defaults;                   // Macro parameter defaults (null: none)
    ExprPtr target_object;                           // Set ns.attr: the namespace expression
    ExprPtr filter;                                  // For ... if filter
    int line = 0;
};

class Template {
public:
    Body body;
};

// Parses source into a Template; throws JinjaError with the line number.
std::unique_ptr<Template> parse_template(std::string_view source, int max_nesting);

} // namespace arbor::jinja
