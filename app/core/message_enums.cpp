#include "message_enums.h"

namespace arbor::app::qml {

MessageRole::Value toQml(arbor::Role role) {
    switch (role) {
    case arbor::Role::System: return MessageRole::Value::System;
    case arbor::Role::User: return MessageRole::Value::User;
    case arbor::Role::Assistant: return MessageRole::Value::Assistant;
    }
    return MessageRole::Value::User;
}

MessageState::Value toQml(arbor::MessageState state) {
    switch (state) {
    case arbor::MessageState::complete: return MessageState::Value::Complete;
    case arbor::MessageState::streaming: return MessageState::Value::Streaming;
    case arbor::MessageState::stopped: return MessageState::Value::Stopped;
    case arbor::MessageState::error: return MessageState::Value::Error;
    }
    return MessageState::Value::Error;
}

} // namespace arbor::app::qml
