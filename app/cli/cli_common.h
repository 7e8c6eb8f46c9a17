// Pieces shared by the arbor-cli commands: model and backend set-up, sampling options.
#pragma once

#include "cli_args.h"

#include "arbor/backend.h"
#include "arbor/model.h"
#include "arbor/sampler.h"

#include <memory>
#include <set>
#include <string>

namespace arbor::cli {

// Options every model command accepts.
std::set<std::string> model_options();
// Sampling options (--temp, --top-k, --top-p, --min-p, --repeat-penalty, --seed).
std::set<std::string> sampling_options();

struct LoadedModel {
    std::unique_ptr<Model> model;
    std::unique_ptr<Backend> backend;
};
// --model (default: the installed default model), --threads, --ctx.
LoadedModel load_model(const CliArgs& args, bool with_backend = true);
SamplerParams sampler_params(const CliArgs& args, float default_temperature);

} // namespace arbor::cli
