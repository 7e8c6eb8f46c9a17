// Who wrote a message of a conversation; shared by chat templates and storage.
#pragma once

namespace arbor {

enum class Role { System, User, Assistant };

} // namespace arbor
