// A Jinja2 interpreter for the chat templates GGUF files carry (tokenizer.chat_template).
// It covers the subset real templates use (for/if/elif/else/set, namespace(), macros,
// break/continue, the common filters, tests and string/dict methods) with the settings
// Hugging Face renders them with: trim_blocks and lstrip_blocks on, `tojson` as Python's
// json.dumps with ensure_ascii off and keys in insertion order, `raise_exception` and
// `strftime_now` as globals. A template is untrusted input: recursion, loop iterations
// and output size are capped, and anything unsupported is a JinjaError naming it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arbor::jinja {

// Parse errors, unsupported constructs, raise_exception() and exceeded limits.
class JinjaError : public std::runtime_error {
public:
    explicit JinjaError(const std::string& what, std::string raised = {})
        : std::runtime_error(what), raised_(std::move(raised)) {}
    // The template's own message where it called raise_exception() (a conversation it
    // refuses), else empty.
    const std::string& raised() const { return raised_; }

private:
    std::string raised_;
};

class Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;  // insertion order, as Python dicts

struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};
using Function = std::function<Value(CallArgs&)>;

// A Python-like value. Arrays and objects are shared by reference (as in Python), which is
// what lets `ns.x = ...` update a namespace() seen from inside a loop.
class Value {
public:
    enum class Type { Undefined, None, Bool, Int, Float, String, Array, Object, Function };

    Value() = default;
    Value(std::nullptr_t) : type_(Type::None) {}
    Value(bool b) : type_(Type::Bool), int_(b) {}
    Value(int i) : type_(Type::Int), int_(i) {}
    Value(int64_t i) : type_(Type::Int), int_(i) {}
    Value(double f) : type_(Type::Float), float_(f) {}
    Value(std::string s) : type_(Type::String), string_(std::make_shared<std::string>(std::move(s))) {}
    Value(const char* s) : Value(std::string(s)) {}
    Value(Array a) : type_(Type::Array), array_(std::make_shared<Array>(std::move(a))) {}
    Value(Object o) : type_(Type::Object), object_(std::make_shared<Object>(std::move(o))) {}
    Value(Function f) : type_(Type::Function), function_(std::make_shared<Function>(std::move(f))) {}

    Type type() const { return type_; }
    bool is_undefined() const { return type_ == Type::Undefined; }
    bool is_none() const { return type_ == Type::None; }
    bool is_string() const { return type_ == Type::String; }
    bool is_number() const { return type_ == Type::Int || type_ == Type::Float || type_ == Type::Bool; }
    bool is_array() const { return type_ == Type::Array; }
    bool is_object() const { return type_ == Type::Object; }
    bool is_function() const { return type_ == Type::Function; }

    bool as_bool() const { return int_ != 0; }
    // Floats truncate toward zero, saturating (NaN is 0).
    int64_t as_int() const {
        if (type_ != Type::Float) return int_;
        if (!(float_ == float_)) return 0;
        if (float_ >= 9.2e18) return INT64_MAX;
        if (float_ <= -9.2e18) return INT64_MIN;
        return int64_t(float_);
    }
    double as_float() const { return type_ == Type::Float ? float_ : double(int_); }
    const std::string& str() const { return *string_; }
    Array& array() const { return *array_; }
    Object& object() const { return *object_; }
    const Function& function() const { return *function_; }

    // Object member or nullptr.
    Value* find(std::string_view key) const;
    // Sets (or adds) an object member.
    void set(const std::string& key, Value v) const;

    bool truthy() const;

private:
    Type type_ = Type::Undefined;
    int64_t int_ = 0;
    double float_ = 0;
    std::shared_ptr<std::string> string_;
    std::shared_ptr<Array> array_;
    std::shared_ptr<Object> object_;
    std::shared_ptr<Function> function_;
};

struct Limits {
    size_t max_output_bytes = 4u << 20;
    int64_t max_steps = 1'000'000;  // loop iterations, macro calls and emitted pieces together
    int max_call_depth = 16;        // nested macro calls
    int max_nesting = 64;           // nested tags and parenthesised expressions in the source
};

class Template;

// A parsed template; render() may be called many times with different contexts.
class CompiledTemplate {
public:
    // Throws JinjaError for a syntax error or an unsupported tag.
    explicit CompiledTemplate(std::string_view source, Limits limits = {});
    ~CompiledTemplate();
    CompiledTemplate(CompiledTemplate&&) noexcept;
    CompiledTemplate& operator=(CompiledTemplate&&) noexcept;

    // `context` is an Object of global variables. Throws JinjaError.
    std::string render(const Value& context) const;

private:
    std::unique_ptr<Template> impl_;
    Limits limits_;
};

// Python's json.dumps(v, ensure_ascii=False) with Jinja's tojson indent option.
std::string to_json(const Value& v, int indent = -1);

} // namespace arbor::jinja
