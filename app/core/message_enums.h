// The role and the state of a message as QML compares them (MessageRole.Assistant,
// MessageState.Streaming): enums registered with QML, mirrors of arbor::Role and
// arbor::MessageState, which the C++ side and the store keep (the store as text, as
// before). The list model's role and state roles return these.
#pragma once

#include "arbor/role.h"
#include "arbor/store.h"

#include <QObject>
#include <QtQml/qqmlregistration.h>

namespace arbor::app::qml {

namespace MessageRole {
Q_NAMESPACE
QML_ELEMENT
enum class Value { System, User, Assistant };
Q_ENUM_NS(Value)
} // namespace MessageRole

namespace MessageState {
Q_NAMESPACE
QML_ELEMENT
enum class Value { Complete, Streaming, Stopped, Error };
Q_ENUM_NS(Value)
} // namespace MessageState

MessageRole::Value toQml(arbor::Role role);
MessageState::Value toQml(arbor::MessageState state);

} // namespace arbor::app::qml
