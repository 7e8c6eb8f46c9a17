// The reference reader behind Json::parse, over nlohmann::json's SAX parser: nlohmann does
// the RFC 8259 lexing and grammar (strict: no comments, trailing commas, leading zeros,
// control characters or invalid UTF-8) in one linear pass; the handler here builds our
// Json directly and adds what nlohmann leaves out: the depth limit and refusing duplicate
// keys (json_parse.cpp checks the rest before). nlohmann tells where its own
// errors are but not where a SAX event happened, so an error the handler finds is placed
// by a second pass that counts events up to it while tracking the bytes read (only
// failing documents pay for it).
#include "api/json_parse_paths.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iterator>
#include <limits>
#include <vector>

namespace arbor::api {
namespace {

// An iterator over the text that records how far the lexer has read (the second pass).
class TrackedIterator {
public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    TrackedIterator(const char* p, const char** cursor) : p_(p), cursor_(cursor) {}
    reference operator*() const { return *p_; }
    TrackedIterator& operator++() {
        *cursor_ = ++p_;
        return *this;
    }
    TrackedIterator operator++(int) {
        TrackedIterator before = *this;
        ++*this;
        return before;
    }
    bool operator==(const TrackedIterator& o) const { return p_ == o.p_; }
    bool operator!=(const TrackedIterator& o) const { return p_ != o.p_; }

private:
    const char* p_;
    const char** cursor_;
};

// nlohmann's messages begin "[json.exception.parse_error.101] parse error at line 1,
// column 13: "; the offset is reported separately, so only the reason after it is kept.
std::string reason_of(const std::string& what) {
    std::string_view s(what);
    if (const size_t bracket = s.find("] "); bracket != std::string_view::npos) s.remove_prefix(bracket + 2);
    if (s.rfind("parse error", 0) == 0)
        if (const size_t colon = s.find(": "); colon != std::string_view::npos) s.remove_prefix(colon + 2);
    return std::string(s);
}

// Counts SAX events up to a given one and stops there, remembering how far the lexer had
// read: the second pass that places an error the building pass found at that event.
class EventLocator : public nlohmann::json_sax<nlohmann::json> {
public:
    EventLocator(size_t event, const char* const& cursor) : event_(event), cursor_(cursor) {}
    const char* where() const { return where_; }

    bool null() override { return next(); }
    bool boolean(bool) override { return next(); }
    bool number_integer(number_integer_t) override { return next(); }
    bool number_unsigned(number_unsigned_t) override { return next(); }
    bool number_float(number_float_t, const string_t&) override { return next(); }
    bool string(string_t&) override { return next(); }
    bool binary(binary_t&) override { return next(); }
    bool start_object(std::size_t) override { return next(); }
    bool key(string_t&) override { return next(); }
    bool end_object() override { return next(); }
    bool start_array(std::size_t) override { return next(); }
    bool end_array() override { return next(); }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

private:
    bool next() {
        if (++seen_ < event_) return true;
        where_ = cursor_;
        return false;
    }
    size_t event_, seen_ = 0;
    const char* const& cursor_;
    const char* where_ = nullptr;
};

} // namespace

class JsonParser {
public:
    using Nl = nlohmann::json;

    JsonParser(std::string_view text, const JsonParseLimits& limits) : text_(text), limits_(limits) {}

    Json document() {
        if (Nl::sax_parse(text_.data(), text_.data() + text_.size(), this, nlohmann::detail::input_format_t::json,
                          true, false))
            return std::move(root_);
        if (failed_event_) error_offset_ = locate(text_, failed_event_, failed_at_key_);
        throw JsonError(error_, std::min(error_offset_, text_.size()));
    }

    // ---- nlohmann's SAX interface ----
    bool null() { return add(Json()); }
    bool boolean(bool b) { return add(Json(b)); }
    bool number_integer(Nl::number_integer_t v) { return add(number(double(v), v, true)); }
    bool number_unsigned(Nl::number_unsigned_t v) {
        const bool fits = v <= Nl::number_unsigned_t(std::numeric_limits<int64_t>::max());
        return add(number(double(v), fits ? int64_t(v) : 0, fits));
    }
    bool number_float(Nl::number_float_t v, const Nl::string_t&) { return add(number(v, 0, false)); }
    bool string(Nl::string_t& s) { return add(Json(std::move(s))); }
    bool binary(Nl::binary_t&) { return fail_here("binary values are not JSON", false); }
    bool key(Nl::string_t& k) {
        ++events_;
        Frame& f = stack_.back();
        const auto& members = std::get<Json::Object>(f.value->value_);
        if (members.size() < kKeyScanLimit) {
            for (const auto& m : members)
                if (m.first == k) return fail_at("duplicate key \"" + k + "\"", events_, true);
        } else {
            f.late_key_events.push_back(events_);
        }
        pending_key_ = std::move(k);
        return true;
    }
    bool start_object(std::size_t) { return open(Json::Object{}); }
    bool end_object() {
        ++events_;
        Frame& f = stack_.back();
        if (!f.late_key_events.empty() && !check_unique_keys(f)) return false;
        stack_.pop_back();
        return true;
    }
    bool start_array(std::size_t) { return open(Json::Array{}); }
    bool end_array() {
        ++events_;
        stack_.pop_back();
        return true;
    }
    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
        // position counts the bytes read, the offending one included.
        error_ = reason_of(e.what());
        error_offset_ = position > 0 ? position - 1 : 0;
        return false;
    }

private:
    // An open array or object: `value` is the last element of its parent (or the root),
    // which stays in place because nothing is added to the parent until it closes.
    struct Frame {
        Json* value;
        std::vector<size_t> late_key_events;  // see check_unique_keys
    };

    // Objects up to this many members compare each new key with the ones before it, so a
    // repeat is refused where it is read; a larger one is checked once at its end by
    // first_repeated_key (O(n log n)).
    static constexpr size_t kKeyScanLimit = 16;

    static Json number(double value, int64_t integer, bool is_integer) {
        Json j;
        j.value_ = Json::Number{value, integer, is_integer};
        return j;
    }

    // The offset of SAX event `event` (1-based): where a key begins, or for any other
    // event the last byte the lexer read for it (an opening bracket).
    size_t locate(std::string_view input, size_t event, bool is_key) const {
        const char* cursor = input.data();
        EventLocator locator(event, cursor);
        Nl::sax_parse(TrackedIterator(input.data(), &cursor), TrackedIterator(input.data() + input.size(), &cursor),
                      &locator, nlohmann::detail::input_format_t::json, true, false);
        if (!locator.where()) return 0;
        const size_t end = size_t(locator.where() - input.data());
        return is_key ? key_start(input, end) : end - 1;
    }

    // Where the key whose closing quote ends just before `end` begins: the nearest
    // earlier quote not escaped by an odd run of backslashes (a key holds no other).
    static size_t key_start(std::string_view input, size_t end) {
        size_t i = end - 1;
        while (i > 0) {
            --i;
            if (input[i] != '"') continue;
            size_t backslashes = 0;
            while (i > backslashes && input[i - 1 - backslashes] == '\\') ++backslashes;
            if (backslashes % 2 == 0) return i;
        }
        return 0;
    }

    bool fail_at(std::string message, size_t event, bool is_key) {
        error_ = std::move(message);
        failed_event_ = event;
        failed_at_key_ = is_key;
        return false;
    }
    bool fail_here(std::string message, bool is_key) { return fail_at(std::move(message), events_, is_key); }

    Json* place(Json value) {
        ++events_;
        if (stack_.empty()) {
            root_ = std::move(value);
            return &root_;
        }
        Json& parent = *stack_.back().value;
        if (auto* items = std::get_if<Json::Array>(&parent.value_)) return &items->emplace_back(std::move(value));
        return &std::get<Json::Object>(parent.value_).emplace_back(std::move(pending_key_), std::move(value)).second;
    }

    bool add(Json value) {
        place(std::move(value));
        return true;
    }

    bool open(Json container) {
        Json* placed = place(std::move(container));
        if (int(stack_.size()) >= limits_.max_depth)
            return fail_here("nesting deeper than " + std::to_string(limits_.max_depth) + " levels", false);
        stack_.push_back({placed, {}});
        return true;
    }

    // Fails at the first key, in document order, that repeats an earlier key of the
    // object. The first kKeyScanLimit keys are already known to differ, so a repeat is a
    // later member; late_key_events[i] is the SAX event of member kKeyScanLimit + i's key.
    bool check_unique_keys(const Frame& f) {
        const auto& members = std::get<Json::Object>(f.value->value_);
        const size_t first_repeat = json_detail::first_repeated_key(members);
        if (first_repeat == members.size()) return true;
        return fail_at("duplicate key \"" + members[first_repeat].first + "\"",
                       f.late_key_events[first_repeat - kKeyScanLimit], true);
    }

    std::string_view text_;
    const JsonParseLimits& limits_;
    size_t events_ = 0;  // SAX events so far
    Json root_;
    std::vector<Frame> stack_;
    std::string pending_key_;
    std::string error_;
    size_t error_offset_ = 0;
    size_t failed_event_ = 0;  // the event the handler refused (0: nlohmann found the error)
    bool failed_at_key_ = false;
};

Json json_detail::parse_with_nlohmann(std::string_view text, const JsonParseLimits& limits) {
    return JsonParser(text, limits).document();
}

} // namespace arbor::api
