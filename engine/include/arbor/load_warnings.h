// What the user should be told about a model that loaded but will not behave quite as its
// makers meant: one sentence per problem (an unknown pre-tokenizer, a chat template that
// could not be used). The app, arbor-cli and arbor-server show these at load, once.
#pragma once

#include "arbor/chat_template.h"
#include "arbor/model.h"
#include "arbor/tokenizer.h"

#include <string>
#include <vector>

namespace arbor {

// The tokenizer's warning, then the chat template's; empty when there are none.
std::vector<std::string> model_load_warnings(const Tokenizer& tokenizer, const ChatFormatter& formatter);
// The model's own (ModelConfig::load_warning), then the tokenizer's and the chat template's.
std::vector<std::string> model_load_warnings(const Model& model, const ChatFormatter& formatter);

} // namespace arbor
