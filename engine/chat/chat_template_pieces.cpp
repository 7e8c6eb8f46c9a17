#include "chat_template_pieces.h"

#include "arbor/jinja.h"

#include <vector>

namespace arbor {
namespace {

using jinja::Value;

// Message texts that no template writes by itself and no filter (trim, strip) changes.
constexpr std::string_view kSystem = "ArborSentinelSystemText";
constexpr std::string_view kUser1 = "ArborSentinelUserOne";
constexpr std::string_view kReply = "ArborSentinelReplyOne";
constexpr std::string_view kUser2 = "ArborSentinelUserTwo";
// Rendered in place of the BOS and EOS texts, so a BOS written by the template is told
// apart from a turn marker that happens to be spelled the same (SmolLM2's BOS is
// <|im_start|>); the real texts are put back into the pieces afterwards.
constexpr std::string_view kBos = "ArborSentinelBos";
constexpr std::string_view kEos = "ArborSentinelEos";

using Message = TemplateMessage;

struct Refused {
    std::string reason;
};

class Deriver {
public:
    Deriver(std::string_view source, const jinja::Object& globals) : template_(source), globals_(globals) {}

    std::string render(const std::vector<Message>& messages, bool generation_prompt) const {
        return template_.render(
            chat_template_context(messages, generation_prompt, std::string(kBos), std::string(kEos), Value(), globals_));
    }

    // The render cut at each message's text: the len(messages) + 1 pieces around them.
    std::vector<std::string> split(const std::vector<Message>& messages, bool generation_prompt) const {
        const std::string text = render(messages, generation_prompt);
        std::vector<std::string> parts;
        size_t at = 0;
        for (const Message& m : messages) {
            const size_t found = text.find(m.content, at);
            if (found == std::string::npos || text.find(m.content, found + 1) != std::string::npos)
                throw Refused{"a " + std::string(m.role) + " message's text does not appear exactly once in the render"};
            parts.push_back(text.substr(at, found - at));
            at = found + m.content.size();
        }
        parts.push_back(text.substr(at));
        return parts;
    }

    static std::string without_prefix(const std::string& s, const std::string& prefix, const char* what) {
        if (s.compare(0, prefix.size(), prefix) != 0) throw Refused{std::string(what)};
        return s.substr(prefix.size());
    }

    static std::string without_suffix(const std::string& s, const std::string& suffix, const char* what) {
        if (s.size() < suffix.size() || s.compare(s.size() - suffix.size(), suffix.size(), suffix) != 0)
            throw Refused{std::string(what)};
        return s.substr(0, s.size() - suffix.size());
    }

    ChatTemplatePieces derive() const {
        ChatTemplatePieces p;
        // [user] with and without the generation prompt: the user turn's end, and the
        // assistant header as the difference. Some templates end a prompt without the
        // generation prompt with EOS (Phi-3); the end is then the part both share, cut
        // before any partly shared <marker>.
        const auto plain = split({{"user", kUser1}}, false);
        const auto prompted = split({{"user", kUser1}}, true);
        if (plain[0] != prompted[0]) throw Refused{"add_generation_prompt changes the start of the prompt"};
        size_t shared = 0;
        while (shared < plain[1].size() && shared < prompted[1].size() && plain[1][shared] == prompted[1][shared]) ++shared;
        if (shared < plain[1].size()) {
            const size_t open = plain[1].rfind('<', shared == 0 ? 0 : shared - 1);
            if (open != std::string::npos && open < shared && plain[1].find('>', open) >= shared) shared = open;
        }
        p.user_end = plain[1].substr(0, shared);
        p.assistant_header = prompted[1].substr(shared);

        // [user, assistant]: what follows a reply; [user, assistant, user]: the user header.
        // Rendered with the generation prompt where the template writes one after a
        // reply too, since without it some templates end the text with EOS (Phi-3).
        const auto replied = split({{"user", kUser1}, {"assistant", kReply}}, true);
        const std::string& tail = replied[2];
        if (tail.size() >= p.assistant_header.size() &&
            tail.compare(tail.size() - p.assistant_header.size(), p.assistant_header.size(), p.assistant_header) == 0)
            p.after_reply = tail.substr(0, tail.size() - p.assistant_header.size());
        else
            p.after_reply = split({{"user", kUser1}, {"assistant", kReply}}, false)[2];
        const auto follow = split({{"user", kUser1}, {"assistant", kReply}, {"user", kUser2}}, true);
        if (follow[2].compare(0, p.after_reply.size(), p.after_reply) != 0)
            throw Refused{"an assistant message in the history ends differently from the last one"};
        p.user_header = follow[2].substr(p.after_reply.size());
        if (p.user_header.empty()) throw Refused{"user turns have no header"};
        // An assistant message in the history may open with less than the generation
        // prompt (DeepSeek-R1 adds <think> to the prompt only). The formatter keeps the
        // whole generation prompt there, because a reply is stored with the prompt it
        // continued; any other difference refuses the template.
        p.history_assistant_header = without_prefix(follow[1], p.user_end, "a user turn ends differently before a reply");
        if (p.assistant_header.compare(0, p.history_assistant_header.size(), p.history_assistant_header) != 0)
            throw Refused{"assistant messages in the history open differently from the generation prompt"};
        const std::string start_without_system = without_suffix(follow[0], p.user_header, "the first user turn opens differently from later ones");

        // [system, user, ...]: the system turn. The prefix is the BOS text when the
        // template starts with it; the rest before the system text is its header.
        const auto with_system =
            split({{"system", kSystem}, {"user", kUser1}, {"assistant", kReply}, {"user", kUser2}}, true);
        p.prefix = with_system[0].compare(0, kBos.size(), kBos) == 0 ? std::string(kBos) : std::string();
        p.system_header = with_system[0].substr(p.prefix.size());
        p.system_end = without_suffix(with_system[1], p.user_header, "the system message is not a turn of its own before the first user turn");
        if (start_without_system.compare(0, p.prefix.size(), p.prefix) != 0)
            throw Refused{"prompts without a system message start differently"};
        p.default_system = start_without_system.substr(p.prefix.size());

        // The pieces must recompose every render exactly.
        const std::string user_turn = p.user_header + std::string(kUser1) + p.user_end;
        const std::string reply_turn = p.history_assistant_header + std::string(kReply) + p.after_reply;
        const std::string second_turn = p.user_header + std::string(kUser2) + p.user_end + p.assistant_header;
        const std::string system_turn = p.system_header + std::string(kSystem) + p.system_end;
        check(render({{"system", kSystem}, {"user", kUser1}, {"assistant", kReply}, {"user", kUser2}}, true),
              p.prefix + system_turn + user_turn + reply_turn + second_turn, "a conversation with a system message");
        check(render({{"user", kUser1}, {"assistant", kReply}, {"user", kUser2}}, true),
              p.prefix + p.default_system + user_turn + reply_turn + second_turn, "a conversation without one");
        check(render({{"system", kSystem}, {"user", kUser1}}, true),
              p.prefix + system_turn + user_turn + p.assistant_header, "a first turn with a system message");
        return p;
    }

private:
    static void check(const std::string& rendered, const std::string& composed, const char* what) {
        if (rendered != composed) throw Refused{std::string("the turn pieces do not recompose ") + what};
    }

    jinja::CompiledTemplate template_;
    jinja::Object globals_;
};

std::string replace_all(std::string s, std::string_view from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
    return s;
}

} // namespace

const char* template_role(Role role) {
    switch (role) {
    case Role::System: return "system";
    case Role::User: return "user";
    case Role::Assistant: return "assistant";
    }
    return "user";
}

jinja::Value chat_template_context(const std::vector<TemplateMessage>& messages, bool add_generation_prompt,
                                   const std::string& bos_token, const std::string& eos_token,
                                   const jinja::Value& tools, const jinja::Object& globals) {
    jinja::Array list;
    for (const TemplateMessage& m : messages)
        list.emplace_back(jinja::Object{{"role", Value(m.role)}, {"content", Value(std::string(m.content))}});
    Value context{globals};
    context.set("messages", Value(std::move(list)));
    context.set("add_generation_prompt", Value(add_generation_prompt));
    context.set("bos_token", Value(bos_token));
    context.set("eos_token", Value(eos_token));
    if (!tools.is_undefined()) context.set("tools", tools);
    return context;
}

jinja::Object strftime_globals(std::time_t now) {
    return {{"strftime_now", Value(jinja::Function([now](jinja::CallArgs& a) {
                 const std::string fmt = a.positional.empty() ? std::string() : a.positional[0].str();
                 std::tm tm{};
                 localtime_r(&now, &tm);
                 char buf[256];
                 return Value(std::string(buf, std::strftime(buf, sizeof buf, fmt.c_str(), &tm)));
             }))}};
}

std::variant<ChatTemplatePieces, std::string> derive_chat_template_pieces(std::string_view jinja_source,
                                                                          const std::string& bos_token,
                                                                          const std::string& eos_token,
                                                                          const jinja::Object& globals) {
    try {
        ChatTemplatePieces p = Deriver(jinja_source, globals).derive();
        for (std::string* piece : {&p.prefix, &p.system_header, &p.system_end, &p.user_header, &p.user_end,
                                   &p.assistant_header, &p.history_assistant_header, &p.after_reply, &p.default_system})
            *piece = replace_all(replace_all(*piece, kBos, bos_token), kEos, eos_token);
        return p;
    } catch (const jinja::JinjaError& e) {
        return std::string(e.what());
    } catch (const Refused& r) {
        return r.reason;
    } catch (const std::exception& e) {
        return std::string("the template could not be rendered: ") + e.what();
    }
}

} // namespace arbor
