#include "arbor/load_warnings.h"

namespace arbor {

std::vector<std::string> model_load_warnings(const Tokenizer& tokenizer, const ChatFormatter& formatter) {
    std::vector<std::string> out;
    for (std::string warning : {tokenizer.load_warning(), formatter.fallback_warning()})
        if (!warning.empty()) out.push_back(std::move(warning));
    return out;
}

} // namespace arbor
