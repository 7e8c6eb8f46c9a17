// The serving engine: one loop thread runs every request (chat tabs, API clients)
// through one continuous-batching scheduler over one paged KV pool with a radix prefix
// cache. submit() and cancel() may be called from any thread.
#pragma once

#include "arbor/backend.h"
#include "arbor/generate_options.h"
#include "arbor/model.h"
#include "arbor/priority.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace arbor {

using RequestId = uint64_t;

// What a request asks for. Generate: a reply of up to options.max_tokens (at least 1)
// tokens. PrefillOnly: the prompt's KV only: it is computed (what the prefix cache does
// not already hold), left in the cache, and the request finishes with
// FinishReason::Length and no tokens (options.max_tokens is not read). A client that
// knows how the next prompt will begin (a chat's next user turn) warms the cache with it
// while the user is still typing. Such a request runs in steps where no other request
// prefills (or after max_wait_steps), so it never delays anyone's first token. With the
// disk tier on, such a request also reads the prompt's pages from disk when they are
// there: a client prefetches a conversation it expects to continue (the app's restored
// tabs) by sending it as a warm-up.
enum class RequestKind { Generate, PrefillOnly };

// cache_namespace scopes the prefix cache: a request reuses (and sees as cached_tokens)
// only KV computed by requests of the same namespace, so clients cannot learn each
// other's prompts by probing what is cached. 0 is the app's own conversations; the API
// server derives one per API key or client group (see api/cache_scope.h).
//
// priority ranks the request against the others (arbor/priority.h); a warm-up runs at
// Priority::Background or lower.
struct Request {
    std::vector<TokenId> prompt;
    GenerateOptions options;
    uint64_t cache_namespace = 0;
    Priority priority = Priority::Normal;
    RequestKind kind = RequestKind::Generate;
    // For a PrefillOnly request (an error with any other kind): its Finished event carries
    // logits (Event::logits), Last: after the prompt's last position; All: after every
    // position it computed, from stats.cached_tokens to the prompt's end. How the
    // numerical tests read the forward pass through the engine (arbor::Generator).
    SequenceRows::Logits logits = SequenceRows::Logits::None;
};

struct RequestStats {
    int32_t prompt_tokens = 0;
    // Prompt tokens whose KV came from the prefix cache: memory or disk. The rest
    // (prompt_tokens - cached_tokens) were computed.
    int32_t cached_tokens = 0;
    int32_t disk_tokens = 0;           // of cached_tokens, the ones read from the disk tier
    int32_t generated_tokens = 0;
    double time_to_first_token_ms = 0.0;  // from submit to the first token
    double decode_tokens_per_second = 0.0;
};

// Per request: Progress events while its prompt is computed in chunks (one after each
// chunk that is not the prompt's last), then Token events, then one Finished event.
struct Event {
    enum class Kind { Token, Progress, Finished };
    Kind kind = Kind::Token;
    RequestId id = 0;
    int32_t prefilled = 0;    // Progress: prompt tokens computed so far (cached ones included) of stats.prompt_tokens
    TokenId token = -1;       // Token: the sampled id
    std::string text;         // Token: text completed by this id (UTF-8-safe, stop strings held back); may be empty
    FinishReason finish = FinishReason::Stop;  // Finished
    std::string error;        // Finished with FinishReason::Error
    RequestStats stats;       // Finished: final; Token: prompt and cache figures
    std::vector<float> logits;  // Finished (not cancelled or failed), as Request::logits asked: n_vocab per position
};

// Called on the engine thread, in order, for one request; it must return quickly (hand
// the event to another thread). It may call Engine::cancel.
using EventSink = std::function<void(const Event&)>;

struct EngineOptions {
    BackendOptions backend;
    int32_t max_batch_tokens = 512;   // rows of one forward step (decode rows + prefill chunks)
    int32_t max_running = 32;         // sequences admitted at once
    int32_t short_queue = 8;          // below this many waiting, admit longest cached prefix first
    int32_t max_wait_steps = 64;      // a request waiting this long is admitted before any other
    // The longest sequence accepted, in tokens (0: the model's trained context). It is
    // bounded by the trained context and by what the KV pool holds (context_size()).
    // The engine's own backend gets it as BackendOptions::context_tokens.
    int32_t context_tokens = 0;
    // The KV disk tier (README "KV disk tier"): whole pages evicted from memory, and every
    // cached page at shutdown, are written under kv_disk_dir (empty: arbor::kv_disk_dir())
    // up to kv_disk_bytes; a prompt continuing a prefix found there reads it back instead
    // of computing it, when that covers at least kv_disk_min_pages pages. 0 bytes: off.
    uint64_t kv_disk_bytes = 0;
    std::filesystem::path kv_disk_dir;
    int32_t kv_disk_min_pages = 4;
};

struct EngineStats {
    int32_t pages_total = 0;
    uint64_t page_bytes = 0;      // one page's K and V over every layer, as the backend keeps them
    int32_t pages_used = 0;       // referenced by sequences or the cache
    int32_t pages_cached = 0;     // held by the prefix cache
    int32_t running = 0;
    int32_t waiting = 0;
    uint64_t steps = 0;
    uint64_t preemptions = 0;     // running sequences whose pages were freed, to be recomputed
    // Disk tier (zero when off): pages and bytes on disk (bytes: every file it counts),
    // pages written and read since start, files rejected (damaged, foreign, not matching)
    // and evicted pages not written because the write queue was full.
    uint64_t disk_pages = 0, disk_bytes = 0, disk_written = 0, disk_read = 0, disk_rejected = 0, disk_dropped = 0;
};

class Engine {
public:
    // Starts the loop thread. Throws arbor::Error when the backend cannot be created.
    Engine(const Model& model, EngineOptions options = {});
    // Runs on a backend the caller made and keeps (options.backend is not read): tests
    // comparing backends generate through the engine on each. The backend must outlive
    // the engine, and nothing else may use its pages meanwhile.
    Engine(const Model& model, Backend& backend, EngineOptions options = {});
    ~Engine();  // shutdown()
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Queues a request; its events go to sink. A request the engine cannot serve (empty
    // prompt, longer than the context, a Generate request for fewer than one token)
    // finishes with FinishReason::Error.
    RequestId submit(Request request, EventSink sink);
    // Cancels a queued or running request: it finishes with FinishReason::Cancelled and
    // everything it held is released. Unknown or finished ids are ignored.
    void cancel(RequestId id);
    // Cancels everything and stops the loop thread. Idempotent.
    void shutdown();

    EngineStats stats() const;
    // Drops every cached page that no request holds.
    void clear_cache();
    // Blocks until no request is queued or running (for tests and benchmarks).
    void wait_idle();

    const Model& model() const;
    int32_t context_size() const;   // longest sequence the engine accepts
    // What runs the forward pass (Backend::description), and why the CPU runs it when
    // EngineOptions::backend.device asked for a GPU ("auto", or "cuda:N" with
    // cpu_fallback) and none could be used (else empty).
    std::string device() const;
    const std::string& device_fallback() const;
    KvType kv_type() const;  // the element type the backend keeps KV in
    // Why the disk tier asked for in EngineOptions is off (the directory cannot be
    // written, the backend has no page bytes, the disk is full); empty when it is on or
    // was not asked for.
    std::string disk_tier_off_reason() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace arbor
