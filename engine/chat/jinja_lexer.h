// Splits Jinja source into text and tag tokens, applying whitespace control the way
// Hugging Face configures Jinja: trim_blocks (the newline after a block or comment tag
// goes) and lstrip_blocks (spaces and tabs before a block or comment tag on its own line
// go), plus the explicit {%- -%} {{- -}} {#- -#} markers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace arbor::jinja {

struct Token {
    enum class Kind { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, End };
    Kind kind;
    std::string text;  // Text content, name, operator, or the decoded string literal
    int line = 0;
};

// Throws JinjaError for an unterminated tag, comment or string.
std::vector<Token> lex(std::string_view source);

} // namespace arbor::jinja
