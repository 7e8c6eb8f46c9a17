#include "device_list.h"

#include "background_job.h"

namespace arbor::app {

namespace {

QString gib(uint64_t bytes) {
    return QString::number(double(bytes) / double(uint64_t(1) << 30), 'f', 1);
}

} // namespace

DeviceList::DeviceList(QObject* parent) : QObject(parent) {
    refresh();
}

QString DeviceList::describe(const arbor::CudaDevice& device) {
    const QString head = tr("GPU %1 · %2").arg(device.ordinal).arg(QString::fromStdString(device.name));
    if (!device.free_bytes) return tr("%1 · %2 GiB").arg(head, gib(device.total_bytes));
    return tr("%1 · %2 of %3 GiB free").arg(head, gib(*device.free_bytes), gib(device.total_bytes));
}

QVariantList DeviceList::choices() const {
    auto choice = [](const QString& value, const QString& label) {
        return QVariantMap{{QStringLiteral("value"), value}, {QStringLiteral("label"), label}};
    };
    QVariantList out{choice(QStringLiteral("auto"), tr("Automatic (the first GPU when it can run the model, else the CPU)")),
                     choice(QStringLiteral("cpu"), tr("CPU"))};
    for (const arbor::CudaDevice& d : found_.devices) out << choice(QStringLiteral("cuda:%1").arg(d.ordinal), describe(d));
    if (listedIndex(selected_) < 0 && selected_.startsWith(QLatin1String("cuda:")))
        out << choice(selected_, searching_ ? tr("GPU %1").arg(selected_.mid(5))
                                            : tr("GPU %1 (not found)").arg(selected_.mid(5)));
    return out;
}

int DeviceList::listedIndex(const QString& device) const {
    if (device == QLatin1String("auto")) return 0;
    if (device == QLatin1String("cpu")) return 1;
    for (size_t i = 0; i < found_.devices.size(); ++i)
        if (device == QStringLiteral("cuda:%1").arg(found_.devices[i].ordinal)) return int(i) + 2;
    return -1;
}

int DeviceList::selectedIndex() const {
    if (const int listed = listedIndex(selected_); listed >= 0) return listed;
    // The chosen GPU that was not found is listed last.
    return selected_.startsWith(QLatin1String("cuda:")) ? int(found_.devices.size()) + 2 : -1;
}

void DeviceList::setSelected(const QString& device) {
    if (device == selected_) return;
    selected_ = device;
    emit changed();
}

void DeviceList::refresh() {
    if (searching_) return;
    searching_ = true;
    emit changed();
    runInBackground(
        this, [] { return arbor::find_cuda_devices(); },
        [this](arbor::CudaDevices found) {
            found_ = std::move(found);
            searching_ = false;
            emit changed();
        },
        [this](const QString& message) {  // find_cuda_devices does not throw; kept for a bad_alloc
            found_ = {{}, message.toStdString()};
            searching_ = false;
            emit changed();
        });
}

} // namespace arbor::app
