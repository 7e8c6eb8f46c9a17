// The choices of the Device setting: automatic, the CPU, and each GPU the CUDA runtime
// finds with its name and free memory, or why it finds none (no driver, no device, a
// build without CUDA). The search runs on a pool thread (a driver's start-up can take a
// second); refresh() searches again, e.g. when the settings are shown, so the free
// memory is current.
#pragma once

#include <QObject>
#include <QString>
#include <QVariantList>
#include <QtQml/qqmlregistration.h>

#include "arbor/cuda_devices.h"

namespace arbor::app {

class DeviceList : public QObject {
    Q_OBJECT
    QML_ELEMENT
    // [{value: "auto" | "cpu" | "cuda:N", label}], the chosen device always among them
    // (a GPU it does not find is listed as not found).
    Q_PROPERTY(QVariantList choices READ choices NOTIFY changed)
    // The device setting's value, for the choices.
    Q_PROPERTY(QString selected READ selected WRITE setSelected NOTIFY changed)
    Q_PROPERTY(int selectedIndex READ selectedIndex NOTIFY changed)  // in choices; -1: none
    Q_PROPERTY(int gpuCount READ gpuCount NOTIFY changed)
    // Why no GPU is listed; empty while searching or when one is.
    Q_PROPERTY(QString noneReason READ noneReason NOTIFY changed)
    Q_PROPERTY(bool searching READ searching NOTIFY changed)
public:
    explicit DeviceList(QObject* parent = nullptr);

    QVariantList choices() const;
    QString selected() const { return selected_; }
    void setSelected(const QString& device);
    int gpuCount() const { return int(found_.devices.size()); }
    QString noneReason() const { return searching_ ? QString() : QString::fromStdString(found_.none_reason); }
    bool searching() const { return searching_; }

    int selectedIndex() const;
    // Searches again (ignored while a search runs).
    Q_INVOKABLE void refresh();

    // "GPU 0 · NVIDIA H100 · 75.2 of 79.6 GiB free"
    static QString describe(const arbor::CudaDevice& device);

signals:
    void changed();

private:
    // Among auto, cpu and the GPUs found; -1 for anything else.
    int listedIndex(const QString& device) const;

    arbor::CudaDevices found_;
    QString selected_;
    bool searching_ = false;
};

} // namespace arbor::app
