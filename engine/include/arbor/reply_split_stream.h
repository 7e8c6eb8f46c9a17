// A streaming reply split as it grows (arbor/reply_reasoning.h), at a cost per piece of the
// piece and of a marker's part held back, not of the whole text so far: a 20,000-token
// reply split anew at every token costs quadratic time. It keeps where the split stands
// (which part the text is in, what each part holds, where each marker search resumes) and
// reads only the bytes the piece adds, plus the few it held back as a possible marker.
#pragma once

#include "arbor/reply_reasoning.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace arbor {

class ReplySplitStream {
public:
    // `opened`: what the prompt wrote of the reply ("<think>" where the template's
    // generation prompt opened the reasoning); it is the start of text().
    explicit ReplySplitStream(std::string_view opened = {});

    // Where each part may have changed: below these byte offsets the part is as it was
    // before the call. A part that only grew reports its former size.
    struct Change {
        size_t reasoning_from = 0;
        size_t answer_from = 0;
    };
    // The reply grew by `piece`. Then parts() == split_reasoning(text(), true).
    Change add(std::string_view piece);
    // The reply is complete. Then parts() == split_reasoning(text(), false) (split whole,
    // once); add() is not called after.
    Change finish();

    const ReplyParts& parts() const { return parts_; }
    const std::string& text() const { return text_; }

private:
    // Where the split stands: which part the bytes after the last marker belong to.
    enum class Mode : uint8_t {
        undecided,  // only whitespace, or the start of an opening marker, so far
        thinking,   // after "<think>", before its "</think>": reasoning
        answering,  // after a "</think>": answer to the end
        plain,      // no opening marker: answer, unless a "</think>" turns it into reasoning
        plain_all,  // a "<think>" in the middle came before the first "</think>": all answer
        harmony,    // harmony messages
    };
    // Finds the first `marker` at or after a start, resuming where the last search ended
    // (less the marker's length, as a marker may have arrived in part).
    struct Search {
        size_t from = 0;
        size_t at = std::string::npos;
        bool find(std::string_view text, std::string_view marker);
    };
    // The non-whitespace extent of text[start, scanned), grown as more is scanned.
    struct Extent {
        size_t scanned = 0;
        size_t first = std::string::npos;  // first non-whitespace byte
        size_t last_end = 0;               // one past the last non-whitespace byte
        void scan(std::string_view text, size_t to);
    };

    void decide();
    void think();
    void answer_rest();
    void plain();
    void harmony();
    std::string_view channel(size_t header_end);

    std::string text_;
    ReplyParts parts_;
    Mode mode_ = Mode::undecided;
    Change change_;

    size_t lead_ = 0;         // undecided: leading whitespace scanned so far
    Extent extent_;           // thinking: the reasoning; answering: the answer;
                              // harmony: the message's content
    Search open_, close_;     // thinking, plain: "<think>", "</think>"
    // Harmony: the message being read, from its header's start.
    size_t header_ = 0;
    bool in_content_ = false;
    Search message_, channel_, end_;
    size_t name_scan_ = 0;    // how far the channel's name was scanned for its end
    size_t content_ = 0;      // harmony: the content's first byte; thinking: the body's
    bool is_answer_ = false;  // the content is the final channel's (or names none)
    size_t part_base_ = 0;    // the size of the part the content extends, before it
};

} // namespace arbor
