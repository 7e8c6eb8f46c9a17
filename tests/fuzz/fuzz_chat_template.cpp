// The chat-template renderer with the fixture vocabularies: template detection and the
// Jinja interpreter on arbitrary template text, and conversations of arbitrary texts and
// replies rendered by every template family or by the template itself where it is used. What the app's prefix cache relies on must hold turn after turn:
// the next prompt starts with the previous prompt plus the reply (not where the template is
// rendered whole), and with follow_up_prefix(previous messages, reply) followed by the new
// user message (rendered whole too: where the template refuses and compose() falls back to
// the family, the prefix is the family's).
#include "fixture_vocabularies.h"

#include "arbor/chat_template.h"

#include <fuzzer/FuzzedDataProvider.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using arbor::ChatMessage;
using arbor::Role;
using arbor::TokenId;
using Ids = std::vector<TokenId>;

bool starts_with(const Ids& ids, const Ids& a, const Ids& b = {}) {
    return ids.size() >= a.size() + b.size() && std::equal(a.begin(), a.end(), ids.begin()) &&
           std::equal(b.begin(), b.end(), ids.begin() + std::ptrdiff_t(a.size()));
}

void check(bool ok, const char* what, const std::string& vocabulary, arbor::ChatTemplateKind kind, int turn) {
    if (ok) return;
    std::fprintf(stderr, "%s (%s, %s, turn %d)\n", what, vocabulary.c_str(),
                 std::string(arbor::chat_template_name(kind)).c_str(), turn);
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    spdlog::set_level(spdlog::level::off);  // unknown templates and missing BOS are logged
    (void)arbor::fuzz::fixture_vocabularies();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FuzzedDataProvider in(data, size);
    const auto& vocabularies = arbor::fuzz::fixture_vocabularies();
    const auto& v = vocabularies[in.ConsumeIntegralInRange<size_t>(0, vocabularies.size() - 1)];
    bool recognised = false;
    // The text is also a Jinja template: rendering it (while taking it apart into turn
    // pieces) may only end in a JinjaError, which makes the formatter fall back.
    const std::string source = in.ConsumeRandomLengthString(4096);
    (void)arbor::detect_chat_template(source, &recognised);
    const auto kind = arbor::ChatTemplateKind(in.ConsumeIntegralInRange(0, 4));
    const arbor::ChatFormatter f = in.ConsumeBool() ? arbor::ChatFormatter(*v.tokenizer, source)
                                                    : arbor::ChatFormatter(*v.tokenizer, kind);
    const Ids stops = f.stop_tokens();
    check(!stops.empty() || v.tokenizer->eos() < 0, "no stop tokens", v.name, kind, 0);

    std::vector<ChatMessage> messages;
    if (in.ConsumeBool()) messages.push_back({Role::System, f.encode_content(in.ConsumeRandomLengthString(64))});
    messages.push_back({Role::User, f.encode_content(in.ConsumeRandomLengthString(64))});
    for (int turn = 0; turn < 4 && in.remaining_bytes() > 0; ++turn) {
        const Ids prompt = f.compose(messages);
        for (TokenId id : prompt) check(id >= 0 && id < v.tokenizer->n_vocab(), "id outside the vocabulary", v.name, kind, turn);
        // A reply as the engine returns it: text the model wrote, possibly closed by one
        // of the template's stop tokens.
        Ids reply = f.encode_content(in.ConsumeRandomLengthString(64));
        if (!stops.empty() && in.ConsumeBool()) reply.push_back(stops[in.ConsumeIntegralInRange<size_t>(0, stops.size() - 1)]);
        const Ids user = f.encode_content(in.ConsumeRandomLengthString(64));
        const Ids follow_up = f.follow_up_prefix(messages, reply);
        messages.push_back({Role::Assistant, reply});
        messages.push_back({Role::User, user});
        const Ids next = f.compose(messages);
        if (f.renders_whole()) {
            check(starts_with(next, follow_up, follow_up.empty() ? Ids{} : user),
                  "the next prompt does not start with the follow-up prefix + user message", v.name, kind, turn);
            continue;
        }
        check(starts_with(next, prompt, reply), "the next prompt does not start with prompt + reply", v.name, kind,
              turn);
        check(follow_up == f.follow_up_prefix(prompt, reply), "the follow-up prefixes differ", v.name, kind, turn);
        check(starts_with(next, follow_up, user),
              "the next prompt does not start with the follow-up prefix + user message", v.name, kind, turn);
    }
    return 0;
}
