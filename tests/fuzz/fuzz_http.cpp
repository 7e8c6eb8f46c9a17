// The HTTP/1.1 request reader on arbitrary bytes, as the server feeds it: a request is
// complete, incomplete or refused with a 4xx/5xx status; a complete request's length lies
// inside the input and parsing only that prefix gives the same request; when the bytes fed
// in the pieces the input picks (as they arrive from a socket) also give a request, it is
// the same one, head and body (chunked or not). On some malformed heads Beast's reading of
// the whole head (it waits for CR LF CR LF) and of its lines one by one differ between
// refused and incomplete or accepted; lines that do not end in CR LF are refused before
// Beast sees them for that reason, and the rest is not checked here.
#include "api/http_request.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

const arbor::api::HttpLimits kLimits{16 * 1024, 64 * 1024};

void check(bool ok, const char* what) {
    if (ok) return;
    std::fprintf(stderr, "%s\n", what);
    std::abort();
}

bool valid_status(int status) { return status >= 400 && status < 600 && arbor::api::http_reason(status); }

bool same(const arbor::api::HttpRequest& a, const arbor::api::HttpRequest& b) {
    return a.method == b.method && a.target == b.target && a.path == b.path && a.minor_version == b.minor_version &&
           a.headers == b.headers && a.body == b.body;
}

// The request read from `input` fed in the given piece sizes (the rest at once when the
// sizes run out), the way the server keeps unconsumed bytes and appends what arrives.
arbor::api::ParsedRequest feed_in_pieces(const std::string& input, const std::vector<size_t>& pieces) {
    using State = arbor::api::RequestParser::State;
    arbor::api::RequestParser parser(kLimits);
    arbor::api::ParsedRequest out;
    std::string pending;
    size_t pos = 0, k = 0, used = 0;
    while (true) {
        const size_t before = pending.size();
        const size_t n = parser.feed(pending);
        check(n <= before, "the parser used more bytes than it was given");
        used += n;
        pending.erase(0, n);
        if (parser.state() == State::Failed) {
            out.error = parser.error();
            return out;
        }
        if (parser.state() == State::Done) {
            out.request = parser.take();
            out.length = used;
            return out;
        }
        if (pos >= input.size() && n == 0) return out;  // incomplete
        if (pos < input.size()) {
            const size_t m = k < pieces.size() ? std::min(pieces[k++], input.size() - pos) : input.size() - pos;
            pending.append(input, pos, m);
            pos += m;
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // Input: a count byte n (mod 9), n piece sizes, then the request bytes.
    std::vector<size_t> pieces;
    size_t used = 0;
    if (size > 0) {
        const size_t n = data[used++] % 9;
        for (size_t i = 0; i < n && used < size; ++i) pieces.push_back(1 + data[used++] % 64);
    }
    const std::string buf(reinterpret_cast<const char*>(data) + used, size - used);

    const auto whole = arbor::api::parse_http_request(buf, kLimits);
    if (whole.error) check(valid_status(whole.error->status), "error status");
    if (whole.request) {
        check(whole.length > 0 && whole.length <= buf.size(), "request length outside the input");
        check(whole.request->body.size() <= kLimits.max_body_bytes, "body over its limit");
        const auto prefix = arbor::api::parse_http_request(std::string_view(buf).substr(0, whole.length), kLimits);
        check(prefix.request && prefix.length == whole.length && same(*prefix.request, *whole.request),
              "the request alone parses differently");
        (void)whole.request->keep_alive();
        (void)whole.request->header("host");
    }

    const auto piecewise = feed_in_pieces(buf, pieces);
    if (piecewise.error) check(valid_status(piecewise.error->status), "error status (in pieces)");
    if (whole.request && piecewise.request) {
        check(same(*piecewise.request, *whole.request) && piecewise.length == whole.length,
              "the request depends on how the bytes arrive");
    }
    return 0;
}
