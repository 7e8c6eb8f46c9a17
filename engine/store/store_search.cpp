// Search over conversation titles and message text: FTS5 where available, else LIKE.
#include "store/store_impl.h"

#include <algorithm>
#include <cctype>

namespace arbor {

using store::Call;

namespace {

constexpr std::size_t kMaxTerms = 16;

std::vector<std::string> split_terms(std::string_view query) {
    std::vector<std::string> terms;
    std::size_t i = 0;
    while (i < query.size() && terms.size() < kMaxTerms) {
        while (i < query.size() && std::isspace(static_cast<unsigned char>(query[i]))) ++i;
        std::size_t j = i;
        while (j < query.size() && !std::isspace(static_cast<unsigned char>(query[j]))) ++j;
        if (j > i) terms.emplace_back(query.substr(i, j - i));
        i = j;
    }
    return terms;
}

// Each word becomes a quoted prefix phrase, so FTS5 operators and punctuation in the
// user's text are taken literally. Words the tokenizer would drop entirely (only
// punctuation) are left out: an empty phrase would match nothing.
std::string fts_expression(const std::vector<std::string>& terms) {
    std::string expr;
    for (const std::string& term : terms) {
        const bool has_word = std::any_of(term.begin(), term.end(), [](char c) {
            const auto u = static_cast<unsigned char>(c);
            return u >= 0x80 || std::isalnum(u);
        });
        if (!has_word) continue;
        if (!expr.empty()) expr += ' ';
        expr += '"';
        for (char c : term) {
            if (c == '"') expr += '"';
            expr += c;
        }
        expr += "\"*";
    }
    return expr;
}

std::string like_pattern(std::string_view term) {
    std::string p = "%";
    for (char c : term) {
        if (c == '%' || c == '_' || c == '\\') p += '\\';
        p += c;
    }
    return p + "%";
}

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// An excerpt of `text` around the first occurrence of `term` (ASCII case folded),
// cut on UTF-8 character boundaries, on one line.
std::string excerpt(const std::string& text, std::string_view term) {
    constexpr std::size_t kBefore = 40, kAfter = 100;
    auto fold = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
    const auto it = std::search(text.begin(), text.end(), term.begin(), term.end(),
                                [&](char a, char b) { return fold(a) == fold(b); });
    const std::size_t at = it == text.end() ? 0 : static_cast<std::size_t>(it - text.begin());
    std::size_t begin = at > kBefore ? at - kBefore : 0;
    std::size_t end = std::min(text.size(), at + term.size() + kAfter);
    while (begin > 0 && is_continuation(static_cast<unsigned char>(text[begin]))) --begin;
    while (end < text.size() && is_continuation(static_cast<unsigned char>(text[end]))) ++end;
    std::string out = begin > 0 ? "…" : "";
    for (std::size_t i = begin; i < end; ++i) out += (text[i] == '\n' || text[i] == '\r') ? ' ' : text[i];
    if (end < text.size()) out += "…";
    return out;
}

// The best hit per conversation (a title hit, else the newest message), newest
// activity first; `hits` yields (conversation_id, message_id, snippet, kind).
std::string ranked_query(const std::string& hits) {
    return "WITH hits (conversation_id, message_id, snippet, kind) AS (" + hits +
           "), ranked AS (SELECT *, row_number() OVER (PARTITION BY conversation_id"
           " ORDER BY kind, message_id DESC) AS n FROM hits)"
           " SELECT c.id, c.title, r.message_id, r.snippet FROM ranked r"
           " JOIN conversations c ON c.id = r.conversation_id WHERE r.n = 1"
           " ORDER BY c.updated_at DESC, c.id DESC LIMIT ?1";
}

} // namespace

std::vector<SearchHit> Store::search(std::string_view query, int limit) const {
    Call call(*impl_, "search the conversations");
    const std::vector<std::string> terms = split_terms(query);
    std::vector<SearchHit> out;
    if (terms.empty() || limit <= 0) return out;

    if (impl_->fts) {
        const std::string expr = fts_expression(terms);
        if (expr.empty()) return out;
        static const std::string sql = ranked_query(
            "SELECT rowid, NULL, '', 0 FROM conversation_fts WHERE conversation_fts MATCH ?2"
            " UNION ALL SELECT m.conversation_id, m.id,"
            " snippet(message_fts, 0, '', '', '…', 16), 1"
            " FROM message_fts JOIN messages m ON m.id = message_fts.rowid"
            " WHERE message_fts MATCH ?2");
        auto q = call.db.query(sql.c_str());
        q.bind(1, limit).bind(2, expr);
        while (q.step()) out.push_back({q.int64(0), q.text(1), q.opt_int64(2), q.text(3)});
        return out;
    }

    // Statements differ only in the number of terms, so the statement cache stays small.
    std::string title_where, text_where;
    for (std::size_t i = 0; i < terms.size(); ++i) {
        std::string param = "?";
        param += std::to_string(i + 2);
        title_where += " AND title LIKE " + param + " ESCAPE '\\'";
        text_where += " AND text LIKE " + param + " ESCAPE '\\'";
    }
    const std::string sql = ranked_query(
        "SELECT id, NULL, NULL, 0 FROM conversations WHERE 1" + title_where +
        " UNION ALL SELECT conversation_id, id, text, 1 FROM messages"
        " WHERE state <> 'streaming'" + text_where);
    auto q = call.db.query(sql.c_str());
    q.bind(1, limit);
    for (std::size_t i = 0; i < terms.size(); ++i)
        q.bind(static_cast<int>(i + 2), like_pattern(terms[i]));
    while (q.step()) {
        const auto message = q.opt_int64(2);
        out.push_back({q.int64(0), q.text(1), message, message ? excerpt(q.text(3), terms[0]) : ""});
    }
    return out;
}

} // namespace arbor
