// Why the loaded model runs on the CPU although a GPU was asked for (the Device setting
// "auto" or "cuda:N"), for the status line and the Model settings page: the engine's
// Engine::device_fallback(), empty when the GPU runs it, the CPU was chosen, or no
// model is loaded.
#pragma once

#include "model_service.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <QtQml/qqmlregistration.h>

namespace arbor::app {

class DeviceStatus : public QObject {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(arbor::app::ModelService* model READ model WRITE setModel NOTIFY changed)
    Q_PROPERTY(QString fallback READ fallback NOTIFY changed)
public:
    explicit DeviceStatus(QObject* parent = nullptr) : QObject(parent) {}

    ModelService* model() const { return model_; }
    void setModel(ModelService* model);
    QString fallback() const;

signals:
    void changed();

private:
    QPointer<ModelService> model_;
};

} // namespace arbor::app
