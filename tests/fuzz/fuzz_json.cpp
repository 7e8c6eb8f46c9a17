// The API's JSON parser and its request readers on arbitrary bytes: a body is either
// parsed or refused with JsonError; the fast reader (simdjson) accepts only what the
// reference reader (nlohmann) accepts, with the same value; a parsed value serializes to
// text that parses back to the same value; the chat and completion readers either build a
// request or refuse the body with ApiError (what the server answers as 400).
#include "api/api_error.h"
#include "api/json.h"
#include "api/json_parse_paths.h"
#include "api/openai_request.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace {

void check(bool ok, const char* what, std::string_view text) {
    if (ok) return;
    std::fprintf(stderr, "%s\ntext: %.*s\n", what, int(text.size()), text.data());
    std::abort();
}

// The vocabulary size the completion reader checks token ids against (the default model's).
constexpr int32_t kVocab = 49152;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    {
        namespace detail = arbor::api::json_detail;
        const std::optional<std::string> rewritten = detail::replace_lone_surrogates(text);
        const std::string_view input = rewritten ? std::string_view(*rewritten) : text;
        if (const std::optional<arbor::api::Json> fast = detail::parse_with_simdjson(input, {})) {
            try {
                check(detail::parse_with_nlohmann(input, {}) == *fast, "the readers disagree on the value", text);
            } catch (const arbor::api::JsonError& e) {
                std::fprintf(stderr, "the reference refuses it: %s\n", e.what());
                check(false, "the fast reader accepted", text);
            }
        }
    }
    arbor::api::Json value;
    try {
        value = arbor::api::Json::parse(text);
    } catch (const arbor::api::JsonError& e) {
        check(e.offset() <= size, "error offset beyond the text", text);
        return 0;
    }
    const std::string dumped = value.dump();
    try {
        const auto again = arbor::api::Json::parse(dumped);
        check(again == value, "dump() does not parse back to the same value", dumped);
        check(again.dump() == dumped, "dump() of the re-parsed value differs", dumped);
    } catch (const arbor::api::JsonError& e) {
        std::fprintf(stderr, "dump() is not valid JSON: %s\n", e.what());
        check(false, "dump() output", dumped);
    }
    try {
        (void)arbor::api::parse_chat_request(value);
    } catch (const arbor::api::ApiError&) {
    }
    try {
        (void)arbor::api::parse_completion_request(value, kVocab);
    } catch (const arbor::api::ApiError&) {
    }
    return 0;
}
