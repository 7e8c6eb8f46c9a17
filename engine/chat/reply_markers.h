// The markers a reasoning model writes into its reply (arbor/reply_reasoning.h) and the
// byte-level helpers both splits use: the whole-text split (reply_reasoning.cpp) and the
// streaming one (reply_split_stream.cpp), which must agree byte for byte.
#pragma once

#include <algorithm>
#include <string_view>

namespace arbor::reply_markers {

inline constexpr std::string_view kThinkOpen = "<think>";
inline constexpr std::string_view kThinkClose = "</think>";
// Harmony: a message is [<|start|>role]<|channel|>name[ header]<|message|>content<|end|>.
inline constexpr std::string_view kStart = "<|start|>";
inline constexpr std::string_view kChannel = "<|channel|>";
inline constexpr std::string_view kMessage = "<|message|>";
inline constexpr std::string_view kEnd = "<|end|>";
inline constexpr std::string_view kFinal = "final";

// ASCII whitespace only (see trimmed_space).
inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

inline std::string_view trimmed_start(std::string_view s) {
    size_t i = 0;
    while (i < s.size() && is_space(s[i])) ++i;
    return s.substr(i);
}

// `s` without a proper prefix of `marker` it ends with (the marker may be arriving).
inline std::string_view without_partial_marker(std::string_view s, std::string_view marker) {
    for (size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n)
        if (s.ends_with(marker.substr(0, n))) return s.substr(0, s.size() - n);
    return s;
}

inline bool is_proper_prefix_of(std::string_view s, std::string_view marker) {
    return s.size() < marker.size() && marker.starts_with(s);
}

// A harmony channel's name ends at whitespace or at the next marker.
inline bool ends_channel_name(char c) { return is_space(c) || c == '<'; }

} // namespace arbor::reply_markers
