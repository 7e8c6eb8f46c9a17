// Pieces shared by the arbor-cli commands: model and engine set-up, sampling options.
#pragma once

#include "cli_args.h"

#include "arbor/engine.h"
#include "arbor/generator.h"
#include "arbor/model.h"
#include "arbor/sampler.h"

#include <filesystem>
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
    std::unique_ptr<Engine> engine;  // every reply goes through it (the app's serving path)
};
// The file --model (or -m) names, else the installed default model; arbor::Error when it
// does not exist.
std::filesystem::path model_path(const CliArgs& args);
// --model (default: the installed default model), --threads, --ctx, --device, --kv-type.
LoadedModel load_model(const CliArgs& args, bool with_engine = true);
// Runs one reply on the loaded engine, printing its text as it comes. Throws arbor::Error
// when the engine refuses the request (a prompt longer than the context).
GenerateResult print_reply(Engine& engine, Request request);
SamplerParams sampler_params(const CliArgs& args, float default_temperature);

} // namespace arbor::cli
