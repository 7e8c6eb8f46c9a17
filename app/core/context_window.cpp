#include "context_window.h"

#include <algorithm>
#include <cstdint>

namespace arbor::app {

std::vector<int> contextCutCandidates(const std::vector<arbor::ChatMessage>& history, int chunkTokens) {
    std::vector<int> cuts{0};
    const int newest = int(history.size()) - 1;
    std::int64_t since = 0;  // content tokens since the last candidate
    for (int i = 0; i + 1 < newest; ++i) {
        since += std::int64_t(history[size_t(i)].content.size());
        if (history[size_t(i) + 1].role == arbor::Role::User && since >= chunkTokens) {
            cuts.push_back(i + 1);
            since = 0;
        }
    }
    if (newest > cuts.back()) cuts.push_back(newest);
    return cuts;
}

int replyReserve(int maxTokens, int context) { return std::max(0, std::min(maxTokens, context / 4)); }

ContextWindow fitContext(const arbor::ChatFormatter& formatter, const std::optional<arbor::ChatMessage>& system,
                         const std::vector<arbor::ChatMessage>& history, int tail, int context, int reserve) {
    ContextWindow window;
    std::string refusal;  // the last prompt's
    auto promptFrom = [&](int cut) {
        std::vector<arbor::ChatMessage> chat;
        if (system) chat.push_back(*system);
        chat.insert(chat.end(), history.begin() + std::min<std::ptrdiff_t>(cut, std::ptrdiff_t(history.size())),
                    history.end());
        return formatter.compose(chat, &refusal);
    };
    auto fits = [&](const std::vector<arbor::TokenId>& prompt, int room) {
        return std::int64_t(prompt.size()) + tail + room <= context;
    };

    const std::vector<int> cuts = contextCutCandidates(history, std::max(1, context / 4));
    // Fewer messages make a shorter prompt, so the candidates that fit are a suffix of
    // the list: search for its start.
    size_t lo = 0, hi = cuts.size();
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        auto prompt = promptFrom(cuts[mid]);
        if (fits(prompt, reserve)) {
            window.prompt = std::move(prompt);
            window.omitted = cuts[mid];
            window.refusal = refusal;
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    if (lo < cuts.size()) return window;

    // Not even the newest message leaves room for the whole reserve: it goes alone, with
    // what room is left, as long as the engine takes it (a prompt shorter than the context).
    window.omitted = cuts.back();
    window.prompt = promptFrom(window.omitted);
    window.refusal = refusal;
    if (fits(window.prompt, 1)) return window;
    window.error = "the newest message" + std::string(system ? " with the system prompt" : "") + " takes " +
                   std::to_string(window.prompt.size() + size_t(tail)) + " tokens, and the context holds " +
                   std::to_string(context) + ": shorten it, or raise the model's context length in Settings";
    window.prompt.clear();
    return window;
}

} // namespace arbor::app
