// The sidebar's conversations, newest activity first, optionally filtered by a search.
// Every change comes back from the store worker by a queued signal and is applied on
// the GUI thread; the model never touches SQLite.
#pragma once

#include "store_worker.h"

#include <QAbstractListModel>
#include <QSet>
#include <QtQml/qqmlregistration.h>

namespace arbor::app {

class ConversationListModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("created by the app")
    Q_PROPERTY(QString filter READ filter WRITE setFilter NOTIFY filterChanged)
public:
    enum Roles { IdRole = Qt::UserRole + 1, TitleRole, UpdatedAtRole };

    // The service must outlive the model.
    explicit ConversationListModel(StoreService& store, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    QString filter() const { return filter_; }
    void setFilter(const QString& filter);

    Q_INVOKABLE void reload();
    // Each edit reloads the list once the store has applied it; create also reports
    // the new id through created().
    Q_INVOKABLE void create(const QString& title);
    Q_INVOKABLE void rename(qint64 id, const QString& title);
    Q_INVOKABLE void remove(qint64 id);
    Q_INVOKABLE int rowOf(qint64 id) const;
    // Leaves the conversation out of the list (a deletion that can still be undone)
    // until shown again.
    void hide(qint64 id);
    void unhide(qint64 id);

signals:
    void filterChanged();
    void loaded();  // a reload was applied
    void created(qint64 id);
    void error(const QString& message);

private:
    void apply(quint64 ticket, const QList<ConversationRow>& rows);

    StoreService& store_;
    QString filter_;
    QList<ConversationRow> rows_;
    QSet<qint64> hidden_;
    quint64 ticket_ = 0;  // only the newest reload is applied
};

} // namespace arbor::app
