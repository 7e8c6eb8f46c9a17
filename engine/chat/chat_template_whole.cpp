// ChatFormatter's whole-template mode: a model's template whose turns are not fixed text
// pieces (gpt-oss, Mistral Nemo) rendered whole for every prompt, with placeholder message
// texts, and each message's ids spliced in where its placeholder landed. compose_with_tools
// renders the same way, with the tools.
#include "arbor/chat_template.h"
#include "arbor/error.h"
#include "arbor/jinja.h"

#include "chat_template_pieces.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

namespace arbor {
namespace {

// Unique for each message, none inside another (the digits end at "Message"), and
// unchanged by trim or strip.
std::string placeholder(size_t i) { return "ArborSentinel" + std::to_string(i) + "Message"; }

size_t common_prefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b) {
    return size_t(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
}

// The <|name|> markers a template's text writes (gpt-oss: <|start|>, <|end|>, <|return|>...).
std::vector<std::string> bar_markers(std::string_view source) {
    std::vector<std::string> out;
    for (size_t at = source.find("<|"); at != std::string_view::npos; at = source.find("<|", at + 2)) {
        const size_t end = source.find("|>", at + 2);
        if (end == std::string_view::npos) break;
        const std::string_view name = source.substr(at + 2, end - at - 2);
        if (name.empty() || name.size() > 32 || name.find_first_of(" \t\n'\"{}<") != std::string_view::npos) continue;
        out.emplace_back(source.substr(at, end + 2 - at));
    }
    return out;
}

} // namespace

std::string ChatFormatter::render_placeholders(const std::vector<ChatMessage>& messages, const jinja::Value& tools,
                                               bool generation_prompt) const {
    std::vector<std::string> texts;
    std::vector<TemplateMessage> shown;
    texts.reserve(messages.size());
    for (size_t i = 0; i < messages.size(); ++i) texts.push_back(placeholder(i));
    for (size_t i = 0; i < messages.size(); ++i) shown.push_back({template_role(messages[i].role), texts[i]});
    return template_->render(
        chat_template_context(shown, generation_prompt, bos_text_, eos_text_, tools, strftime_globals(now_)));
}

std::vector<TokenId> ChatFormatter::splice(const std::string& rendered, const std::vector<ChatMessage>& messages,
                                           std::optional<size_t> stop_at) const {
    struct Spot {
        size_t at, index;
    };
    std::vector<Spot> spots;
    for (size_t i = 0; i < messages.size(); ++i) {
        const std::string text = placeholder(i);
        const size_t found = rendered.find(text);
        if (found == std::string::npos || rendered.find(text, found + 1) != std::string::npos)
            throw Error("the model's chat template does not show each message exactly once");
        spots.push_back({found, i});
    }
    // Templates may move a message (Mistral Nemo writes the system text into the last
    // user turn): the ids go where the render put them.
    std::sort(spots.begin(), spots.end(), [](const Spot& a, const Spot& b) { return a.at < b.at; });
    std::vector<TokenId> out;
    const auto append_text = [&](size_t from, size_t to) {
        const auto piece = special(std::string_view(rendered).substr(from, to - from));
        out.insert(out.end(), piece.begin(), piece.end());
    };
    size_t at = 0;
    bool stopped = false;
    for (const Spot& s : spots) {
        append_text(at, s.at);
        if (stop_at && s.index == *stop_at) {
            stopped = true;
            break;
        }
        out.insert(out.end(), messages[s.index].content.begin(), messages[s.index].content.end());
        at = s.at + placeholder(s.index).size();
    }
    if (!stopped) append_text(at, rendered.size());
    // The same rule as the pieces: the tokenizer's BOS when the vocabulary asks for one
    // and the template wrote none.
    if (tokenizer_.adds_bos() && tokenizer_.bos() >= 0 && (out.empty() || out.front() != tokenizer_.bos()))
        out.insert(out.begin(), tokenizer_.bos());
    return out;
}

std::vector<TokenId> ChatFormatter::history_reply(const std::vector<TokenId>& content) const {
    auto begin = content.begin(), end = content.end();
    // The template writes the reply's end itself (gpt-oss <|end|> for the <|return|> the
    // model wrote; Nemo </s> for its </s>).
    if (begin != end && std::find(stop_tokens_.begin(), stop_tokens_.end(), *(end - 1)) != stop_tokens_.end()) --end;
    if (!reply_opening_.empty()) {
        const auto last = std::search(std::make_reverse_iterator(end), std::make_reverse_iterator(begin),
                                      reply_opening_.rbegin(), reply_opening_.rend());
        if (last != std::make_reverse_iterator(begin)) begin = last.base();
    }
    return {begin, end};
}

std::vector<ChatMessage> ChatFormatter::shown_in_history(const std::vector<ChatMessage>& messages) const {
    std::vector<ChatMessage> shown = messages;
    for (ChatMessage& m : shown)
        if (m.role == Role::Assistant) m.content = history_reply(m.content);
    return shown;
}

namespace {

// The template's own words where it refused the conversation (raise_exception), else
// the renderer's error.
std::string refusal_note(const std::exception& e, ChatTemplateKind family) {
    const auto* jinja_error = dynamic_cast<const jinja::JinjaError*>(&e);
    const std::string format = std::string(chat_template_name(family)) + " format";
    if (jinja_error && !jinja_error->raised().empty())
        return "the model's chat template refuses this conversation (\u201c" + jinja_error->raised() +
               "\u201d), so Arbor writes the prompt in the " + format;
    return "the model's chat template cannot render this conversation (" + std::string(e.what()) +
           "), so Arbor writes the prompt in the " + format;
}

} // namespace

std::vector<TokenId> ChatFormatter::compose_whole(const std::vector<ChatMessage>& messages,
                                                 std::string* refusal) const {
    const std::vector<ChatMessage> shown = shown_in_history(messages);
    try {
        return splice(render_placeholders(shown, jinja::Value()), shown);
    } catch (const std::exception& e) {
        // A conversation the template refuses (Nemo's roles must alternate): the family
        // composes it rather than nothing, and says so.
        const std::string note = refusal_note(e, kind_);
        spdlog::warn("chat template: {}", note);
        if (refusal) *refusal = note;
        return compose_pieces(messages);
    }
}

std::vector<TokenId> ChatFormatter::follow_up_prefix(const std::vector<ChatMessage>& messages,
                                                     const std::vector<TokenId>& reply) const {
    if (!whole_) return follow_up_prefix(compose(messages), reply);
    std::vector<ChatMessage> next = shown_in_history(messages);
    next.push_back({Role::Assistant, history_reply(reply)});
    next.push_back({Role::User, {}});
    // compose() renders the same placeholders whatever the user writes, so its prompt
    // has the same text, tokenized in the same pieces, up to the user's placeholder.
    try {
        return splice(render_placeholders(next, jinja::Value()), next, next.size() - 1);
    } catch (const std::exception&) {
        // compose() falls back to the family for M + [reply, U]: its prompt begins so (a
        // restored tab's warm-up computes exactly that; it computed nothing before).
        return pieces_follow_up(compose_pieces(messages), reply);
    }
}

bool ChatFormatter::init_whole(std::string_view jinja_source, std::string* reason) {
    const auto text_of = [&](TokenId id) { return id >= 0 ? tokenizer_.token_bytes(id) : std::string(); };
    try {
        template_ = std::make_shared<const jinja::CompiledTemplate>(jinja_source);
        bos_text_ = text_of(tokenizer_.bos());
        eos_text_ = text_of(tokenizer_.eos());
        const std::vector<ChatMessage> chat{{Role::System, encode_content("Be brief.")},
                                            {Role::User, encode_content("Hello there.")},
                                            {Role::Assistant, encode_content("Hi.")},
                                            {Role::User, encode_content("And again?")}};
        const std::vector<ChatMessage> first(chat.begin() + 1, chat.begin() + 2), second(chat.begin() + 1, chat.end());
        for (const auto* conversation : {&first, &second, &chat})
            (void)splice(render_placeholders(*conversation, jinja::Value()), *conversation);

        // The reply's opening beyond the generation prompt: the text before a reply's
        // placeholder in the history, less the text after the user's in a prompt.
        const std::string prompted = render_placeholders(first, jinja::Value());
        const std::string replied = render_placeholders({chat[1], chat[2]}, jinja::Value());
        const std::string generation = prompted.substr(prompted.find(placeholder(0)) + placeholder(0).size());
        const size_t user_end = replied.find(placeholder(0)) + placeholder(0).size();
        const size_t reply_at = replied.find(placeholder(1));
        const std::string opening = reply_at > user_end ? replied.substr(user_end, reply_at - user_end) : std::string();
        // Only a marker counts: Mistral v0.3's history writes a space before each reply,
        // and a space id taken for the opening would cut a reply at its last space.
        const std::string_view beyond =
            std::string_view(opening).substr(std::min(opening.size(), generation.size()));
        if (opening.size() > generation.size() && opening.compare(0, generation.size(), generation) == 0 &&
            beyond.find_first_not_of(" \t\n\r") != std::string_view::npos)
            reply_opening_ = special(beyond);

        // Stop ids: how the template closes a final reply (the text after it when no
        // generation prompt follows), the end-of-generation markers it names, then EOS.
        std::vector<TokenId> stops;
        const auto add_stop = [&](TokenId id) {
            if (std::find(stops.begin(), stops.end(), id) == stops.end()) stops.push_back(id);
        };
        try {
            const std::string closed = render_placeholders({chat[1], chat[2]}, jinja::Value(), false);
            const size_t reply_end = closed.find(placeholder(1));
            if (reply_end != std::string::npos) {
                const auto after = special(std::string_view(closed).substr(reply_end + placeholder(1).size()));
                if (!after.empty() && tokenizer_.is_special(after.front())) add_stop(after.front());
            }
        } catch (const jinja::JinjaError&) {
            // a template that needs the generation prompt: the markers and EOS below
        }
        for (const std::string& marker : bar_markers(jinja_source))
            if (const auto id = tokenizer_.find(marker); id && tokenizer_.is_end_of_generation(*id)) add_stop(*id);
        if (tokenizer_.eos() >= 0) add_stop(tokenizer_.eos());
        stop_tokens_ = std::move(stops);
    } catch (const std::exception& e) {
        reply_opening_.clear();
        *reason = e.what();
        template_.reset();
        return false;
    }
    whole_ = true;
    uses_model_template_ = true;

    // What a follow-up shares with the prompt and reply before it, with and without a
    // system message, for the note.
    size_t worst = 2;  // 2: all of the reply; 1: up to the reply's start; 0: less
    for (bool with_system : {false, true}) {
        std::vector<ChatMessage> m;
        if (with_system) m.push_back({Role::System, encode_content("Be brief.")});
        m.push_back({Role::User, encode_content("Hello there.")});
        const auto prompt = compose(m);
        const auto reply = encode_content("Hi.");
        m.push_back({Role::Assistant, reply});
        m.push_back({Role::User, encode_content("And again?")});
        const auto next = compose(m);
        auto continued = prompt;
        continued.insert(continued.end(), reply.begin(), reply.end());
        const size_t shared = common_prefix(continued, next);
        worst = std::min(worst, shared >= continued.size() ? size_t(2)
                                : shared >= prompt.size()  ? size_t(1)
                                                           : size_t(0));
    }
    template_note_ = "rendered whole, as its turns are not fixed pieces (" + template_note_ + "): a follow-up " +
                     (worst == 2 ? "computes only the new message"
                      : worst == 1
                          ? "recomputes from the last reply's start (the template shows a reply differently in "
                            "the history)"
                          : "recomputes earlier turns too (the template renders them differently as the "
                            "conversation goes on)");
    return true;
}

std::vector<TokenId> ChatFormatter::compose_with_tools(const std::vector<ChatMessage>& messages,
                                                       const jinja::Value& tools) const {
    if (!template_)
        throw Error(fallback_warning_.empty()
                        ? std::string("tools need the model's own chat template")
                        : "tools need the model's own chat template, and " + fallback_warning_);
    const std::vector<ChatMessage> shown = shown_in_history(messages);
    std::string with, without;
    try {
        with = render_placeholders(shown, tools);
        without = render_placeholders(shown, jinja::Value());
    } catch (const jinja::JinjaError& e) {
        throw Error(std::string("the model's chat template could not render these messages with tools: ") + e.what());
    }
    if (with == without) throw Error("the model's chat template does not show tools to the model");
    return splice(with, shown);
}

} // namespace arbor
