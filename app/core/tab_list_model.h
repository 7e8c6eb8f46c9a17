// The open conversations, one tab each, in order, with the current one. Each tab owns
// its ChatSession, so tabs generate independently through the shared engine. The list
// (with each tab's branch and the current tab) is saved to the store whenever it changes
// and restored at start.
#pragma once

#include "chat_session.h"

#include <QAbstractListModel>
#include <QTimer>
#include <QtQml/qqmlregistration.h>

namespace arbor::app {

class TabListModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("created by the app")
    Q_PROPERTY(int currentIndex READ currentIndex WRITE setCurrentIndex NOTIFY currentChanged)
    Q_PROPERTY(arbor::app::ChatSession* current READ current NOTIFY currentChanged)
    Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
public:
    enum Roles { SessionRole = Qt::UserRole + 1, ConversationIdRole, TitleRole, GeneratingRole };

    TabListModel(StoreService& store, ModelService& models, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    int currentIndex() const { return current_; }
    void setCurrentIndex(int index);
    ChatSession* current() const;
    Q_INVOKABLE arbor::app::ChatSession* sessionAt(int index) const;

    // Reopens the tabs saved by the last run (after the store has opened).
    void restore();
    // Opens none of them and forgets them (the last start never finished), then restored().
    void skipRestore();
    // Opens the conversation in a new tab, or switches to its tab when already open.
    Q_INVOKABLE void openConversation(qint64 conversationId);
    // Creates an empty conversation (titled by its first message) in a new tab.
    Q_INVOKABLE void newConversation();
    Q_INVOKABLE void closeTab(int index);
    Q_INVOKABLE void closeConversation(qint64 conversationId);  // when it was deleted
    Q_INVOKABLE void nextTab();
    Q_INVOKABLE void previousTab();
    Q_INVOKABLE int indexOf(qint64 conversationId) const;
    void renamed(qint64 conversationId, const QString& title);

signals:
    void currentChanged();
    void countChanged();
    void restored();
    // A tab's conversation changed in a way the sidebar shows (title, new activity).
    void conversationActivity(qint64 conversationId);

private:
    ChatSession* addSession(qint64 conversationId, qint64 leaf);
    void sessionChanged(ChatSession* session, const QList<int>& roles);
    void scheduleSave();
    void save();

    StoreService& store_;
    ModelService& models_;
    QList<ChatSession*> sessions_;  // owned (children)
    int current_ = -1;
    bool restoring_ = false;
    QTimer saveTimer_;  // folds bursts of changes into one write
};

} // namespace arbor::app
