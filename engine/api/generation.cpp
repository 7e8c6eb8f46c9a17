#include "api/generation.h"

#include <condition_variable>
#include <deque>
#include <mutex>

namespace arbor::api {

struct Generation::Inbox {
    std::mutex mutex;
    std::condition_variable arrived;
    std::deque<Update> updates;
};

Generation::Generation(Engine& engine, std::vector<Request> requests)
    : engine_(engine), inbox_(std::make_shared<Inbox>()), done_(requests.size(), false) {
    ids_.reserve(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
        ids_.push_back(engine_.submit(std::move(requests[i]), [inbox = inbox_, i](const Event& e) {
            std::lock_guard lock(inbox->mutex);
            inbox->updates.push_back({i, e});
            inbox->arrived.notify_one();
        }));
    }
}

Generation::~Generation() {
    if (!finished()) cancel();
}

std::vector<Generation::Update> Generation::wait(std::chrono::milliseconds timeout) {
    std::vector<Update> out;
    {
        std::unique_lock lock(inbox_->mutex);
        inbox_->arrived.wait_for(lock, timeout, [&] { return !inbox_->updates.empty(); });
        out.assign(std::make_move_iterator(inbox_->updates.begin()), std::make_move_iterator(inbox_->updates.end()));
        inbox_->updates.clear();
    }
    for (const auto& u : out)
        if (u.event.kind == Event::Kind::Finished && !done_[u.index]) {
            done_[u.index] = true;
            ++finished_;
        }
    return out;
}

void Generation::cancel() {
    for (size_t i = 0; i < ids_.size(); ++i)
        if (!done_[i]) engine_.cancel(ids_[i]);
}

} // namespace arbor::api
