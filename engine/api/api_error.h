// An error answered to an API client with OpenAI's body:
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
#pragma once

#include "api/json.h"

#include <stdexcept>
#include <string>

namespace arbor::api {

struct ApiError : std::runtime_error {
    ApiError(int status, std::string message, std::string param = {}, std::string code = {},
             std::string type = "invalid_request_error")
        : std::runtime_error(message), status(status), param(std::move(param)), code(std::move(code)),
          type(std::move(type)) {}

    int status;
    std::string param;  // empty: null
    std::string code;   // empty: null
    std::string type;

    Json body() const {
        Json e = Json::object();
        e.set("message", what());
        e.set("type", type);
        e.set("param", param.empty() ? Json() : Json(param));
        e.set("code", code.empty() ? Json() : Json(code));
        Json out = Json::object();
        out.set("error", std::move(e));
        return out;
    }
};

// 400 for a request field of the wrong type or value.
inline ApiError invalid_param(const std::string& param, const std::string& message) {
    return ApiError(400, message, param, "invalid_value");
}

} // namespace arbor::api
