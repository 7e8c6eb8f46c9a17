// The engine requests of one API call (one per prompt), with their events handed from
// the engine thread to the HTTP thread that serves the call. Whatever has not finished
// when the Generation is destroyed is cancelled, so a handler that returns early (a
// client that left, a failed write) never leaves work running.
#pragma once

#include "arbor/engine.h"

#include <chrono>
#include <memory>
#include <vector>

namespace arbor::api {

class Generation {
public:
    Generation(Engine& engine, std::vector<Request> requests);
    ~Generation();
    Generation(const Generation&) = delete;
    Generation& operator=(const Generation&) = delete;

    struct Update {
        size_t index;  // which request (position in the constructor's list)
        Event event;
    };
    // The events that arrived since the last call, waiting up to `timeout` for one.
    std::vector<Update> wait(std::chrono::milliseconds timeout);
    // True once wait() has returned a Finished event for every request.
    bool finished() const { return finished_ == ids_.size(); }
    void cancel();

private:
    struct Inbox;
    Engine& engine_;
    std::shared_ptr<Inbox> inbox_;  // shared with the engine's sinks, which may outlive this
    std::vector<RequestId> ids_;
    std::vector<bool> done_;
    size_t finished_ = 0;
};

} // namespace arbor::api
