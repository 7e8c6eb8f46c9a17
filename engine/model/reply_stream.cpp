#include "reply_stream.h"

namespace arbor {

ReplyStream::ReplyStream(const Tokenizer& tokenizer, const GenerateOptions& options)
    : tokenizer_(tokenizer), options_(options), decoder_(tokenizer), stops_(options.stop_strings) {}

ReplyStream::Step ReplyStream::push(TokenId id) {
    ++count_;
    Step step;
    if (options_.stop_at_end_of_generation && tokenizer_.is_end_of_generation(id)) {
        step.finish = FinishReason::Stop;
        return step;
    }
    auto matched = stops_.push(decoder_.push(id));
    step.text = std::move(matched.emit);
    if (matched.stopped) {
        hit_stop_string_ = true;
        step.finish = FinishReason::Stop;
    } else if (count_ >= options_.max_tokens) {
        step.finish = FinishReason::Length;
    }
    return step;
}

std::string ReplyStream::flush() {
    if (hit_stop_string_) return {};
    auto tail = stops_.push(decoder_.flush());
    return tail.stopped ? std::move(tail.emit) : std::move(tail.emit) + stops_.flush();
}

} // namespace arbor
