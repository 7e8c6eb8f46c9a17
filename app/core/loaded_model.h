// A model with the engine that serves it, shared by the parts of the app that use it
// (chat sessions, the API server, store jobs composing prompts). Whoever drops the last
// reference destroys it; ModelService makes sure that is never the GUI thread, because
// destroying the engine joins its loop thread.
#pragma once

#include "arbor/chat_template.h"
#include "arbor/engine.h"
#include "arbor/model.h"

#include <QString>
#include <QStringList>

#include <memory>

namespace arbor::app {

struct LoadedModel {
    std::unique_ptr<arbor::Model> model;
    std::unique_ptr<arbor::Engine> engine;
    std::unique_ptr<arbor::ChatFormatter> formatter;  // the model's chat template
    QString path;
    QString name;  // file name without .gguf
    QString displayName;  // general.name, else `name`
    QString quantType;    // "Q4_K_M", "F16": see ModelFileInfo::quantType
    QString architecture;  // general.architecture ("llama", "qwen3")
    // What the user should be told about this model, one sentence each (load_warnings.h).
    QStringList warnings;

    ~LoadedModel() {
        // The engine and the formatter borrow the model.
        formatter.reset();
        engine.reset();
    }
};

} // namespace arbor::app
