// The HTTP/1.1 request parser on arbitrary bytes, as the server feeds it: the head is
// complete, incomplete or refused with a 4xx/5xx status; a complete head's length lies
// inside the buffer and parsing only that prefix gives the same request; a chunked body
// decodes to the same bytes whether it arrives at once or in the pieces the input picks.
#include "api/http_request.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr size_t kMaxHead = 16 * 1024;
constexpr size_t kMaxBody = 64 * 1024;

void check(bool ok, const char* what) {
    if (ok) return;
    std::fprintf(stderr, "%s\n", what);
    std::abort();
}

bool valid_status(int status) { return status >= 400 && status < 600 && arbor::api::http_reason(status); }

using arbor::api::ChunkedDecoder;

// Feeds `input` to a fresh decoder in the given piece sizes (the rest at once when the
// sizes run out); returns the final state and the decoded body.
ChunkedDecoder::State decode(const std::string& input, const std::vector<size_t>& pieces, std::string& body) {
    ChunkedDecoder decoder(kMaxBody);
    std::string buf;
    size_t pos = 0, k = 0;
    auto state = ChunkedDecoder::State::NeedMore;
    while (state == ChunkedDecoder::State::NeedMore && pos < input.size()) {
        const size_t n = k < pieces.size() ? std::min(pieces[k++], input.size() - pos) : input.size() - pos;
        buf.append(input, pos, n);
        pos += n;
        state = decoder.feed(buf, body);
        if (state == ChunkedDecoder::State::Failed) check(valid_status(decoder.error().status), "chunk error status");
    }
    return state;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // Input: a count byte n (mod 9), n piece sizes for the chunked body, then the request.
    std::vector<size_t> pieces;
    size_t used = 0;
    if (size > 0) {
        const size_t n = data[used++] % 9;
        for (size_t i = 0; i < n && used < size; ++i) pieces.push_back(1 + data[used++] % 64);
    }
    const std::string buf(reinterpret_cast<const char*>(data) + used, size - used);

    arbor::api::HttpRequest req;
    const auto head = arbor::api::parse_request_head(buf, kMaxHead, req);
    using State = arbor::api::HeadResult::State;
    if (head.state == State::Failed) {
        check(valid_status(head.error.status), "head error status");
        return 0;
    }
    if (head.state == State::Incomplete) return 0;
    check(head.length > 0 && head.length <= buf.size(), "head length outside the buffer");
    arbor::api::HttpRequest again;
    const auto prefix = arbor::api::parse_request_head(std::string_view(buf).substr(0, head.length), kMaxHead, again);
    check(prefix.state == State::Complete && prefix.length == head.length, "the head alone parses differently");
    check(again.method == req.method && again.target == req.target && again.headers == req.headers,
          "the head alone gives another request");
    (void)req.keep_alive();
    (void)req.header("host");

    arbor::api::BodyFraming framing;
    if (const auto error = arbor::api::body_framing(req, framing)) {
        check(valid_status(error->status), "framing error status");
        return 0;
    }
    if (!framing.chunked) return 0;
    const std::string rest = buf.substr(head.length);
    std::string whole_body, piecewise_body;
    const auto whole = decode(rest, {}, whole_body);
    const auto piecewise = decode(rest, pieces, piecewise_body);
    check(whole == piecewise, "chunked decoding depends on how the bytes arrive");
    if (whole == ChunkedDecoder::State::Done) check(whole_body == piecewise_body, "chunked bodies differ");
    check(whole_body.size() <= kMaxBody, "chunked body over its limit");
    return 0;
}
