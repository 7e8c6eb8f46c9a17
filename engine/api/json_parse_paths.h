// The two readers behind Json::parse (json_parse.cpp chooses between them) and the checks
// they share. simdjson reads a valid document several times faster than nlohmann but says
// nothing of where an error is, so it is the fast path for documents it accepts and
// nlohmann's SAX parser is the reference: it places every error, and decides whenever the
// fast path is unsure. Both see the text after the checks Json::parse makes first (size,
// byte order mark, lone surrogate escapes rewritten to \uFFFD).
#pragma once

#include "api/json.h"

#include <optional>
#include <string>
#include <string_view>

namespace arbor::api::json_detail {

// nlohmann refuses a surrogate escape without its partner; we take it as U+FFFD, as
// JavaScript's TextEncoder would (Python's json.dumps writes them for broken text). Each
// such escape is rewritten to \uFFFD, which has the same length, so offsets hold.
// nullopt: the text has none.
std::optional<std::string> replace_lone_surrogates(std::string_view text);

// The index of the first member whose key repeats an earlier member's, in document order;
// members.size() when all differ. O(n log n) whatever the keys are.
size_t first_repeated_key(const Json::Object& members);

// The value of `text` by nlohmann's SAX parser, or JsonError with the reason and offset.
Json parse_with_nlohmann(std::string_view text, const JsonParseLimits& limits);

// The value of `text` by simdjson when simdjson accepts it and it breaks none of our
// rules; nullopt otherwise (also where the value could differ from nlohmann's), and then
// parse_with_nlohmann decides. Never accepts a document parse_with_nlohmann refuses.
std::optional<Json> parse_with_simdjson(std::string_view text, const JsonParseLimits& limits);

} // namespace arbor::api::json_detail
