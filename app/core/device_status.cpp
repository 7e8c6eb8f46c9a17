#include "device_status.h"

namespace arbor::app {

void DeviceStatus::setModel(ModelService* model) {
    if (model == model_) return;
    if (model_) disconnect(model_, nullptr, this, nullptr);
    model_ = model;
    if (model_) connect(model_, &ModelService::stateChanged, this, &DeviceStatus::changed);
    emit changed();
}

QString DeviceStatus::fallback() const {
    const auto loaded = model_ ? model_->current() : nullptr;
    return loaded ? QString::fromStdString(loaded->engine->device_fallback()) : QString();
}

} // namespace arbor::app
