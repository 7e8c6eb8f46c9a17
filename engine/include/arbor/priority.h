// How a request ranks against the others in the engine's scheduler.
#pragma once

#include <cstdint>

namespace arbor {

// Normal: everything someone waits for (a reply, an API call).
// Background: a warm-up someone will soon need (a RequestKind::PrefillOnly request is
//   always at least this): its prompt is computed in steps where no Normal request computes a
//   prompt (a few rows at a time in steps that decode a Normal request's reply), or once it
//   has waited EngineOptions::max_wait_steps.
// Idle: prefetching nobody waits for yet (the app's restored tabs): its prompt is computed
//   only in steps where no Normal or Background request computes one and no Normal reply
//   decodes, however long it waits (under constant load it may never run); one Idle
//   request runs at a time, and it gives up its pages (is preempted, what it computed
//   kept in the prefix cache) when a higher request could not otherwise be admitted.
enum class Priority : uint8_t { Normal = 0, Background = 1, Idle = 2 };

} // namespace arbor
