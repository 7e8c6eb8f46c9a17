#include "arbor/load_warnings.h"

namespace arbor {

std::vector<std::string> model_load_warnings(const Tokenizer& tokenizer, const ChatFormatter& formatter) {
    std::vector<std::string> out;
    for (std::string warning : {tokenizer.load_warning(), formatter.fallback_warning()})
        if (!warning.empty()) out.push_back(std::move(warning));
    return out;
}

std::vector<std::string> model_load_warnings(const Model& model, const ChatFormatter& formatter) {
    std::vector<std::string> out = model_load_warnings(model.tokenizer(), formatter);
    if (!model.config().load_warning.empty()) out.insert(out.begin(), model.config().load_warning);
    return out;
}

} // namespace arbor
