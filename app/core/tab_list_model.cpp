#include "tab_list_model.h"

namespace arbor::app {

TabListModel::TabListModel(StoreService& store, ModelService& models, QObject* parent)
    : QAbstractListModel(parent), store_(store), models_(models) {
    saveTimer_.setSingleShot(true);
    saveTimer_.setInterval(0);
    connect(&saveTimer_, &QTimer::timeout, this, &TabListModel::save);
}

int TabListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(sessions_.size());
}

QVariant TabListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    ChatSession* s = sessions_[index.row()];
    switch (role) {
    case SessionRole: return QVariant::fromValue(s);
    case ConversationIdRole: return s->conversationId();
    case TitleRole:
    case Qt::DisplayRole: return s->title().isEmpty() ? QStringLiteral("New conversation") : s->title();
    case GeneratingRole: return s->generating();
    default: return {};
    }
}

QHash<int, QByteArray> TabListModel::roleNames() const {
    return {{SessionRole, "session"}, {ConversationIdRole, "conversationId"}, {TitleRole, "title"},
            {GeneratingRole, "generating"}};
}

ChatSession* TabListModel::current() const { return sessionAt(current_); }

ChatSession* TabListModel::sessionAt(int index) const {
    return index >= 0 && index < sessions_.size() ? sessions_[index] : nullptr;
}

void TabListModel::setCurrentIndex(int index) {
    if (sessions_.isEmpty()) index = -1;
    else index = std::clamp(index, 0, int(sessions_.size()) - 1);
    if (index == current_) return;
    current_ = index;
    emit currentChanged();
    scheduleSave();
}

int TabListModel::indexOf(qint64 conversationId) const {
    for (int i = 0; i < sessions_.size(); ++i)
        if (sessions_[i]->conversationId() == conversationId) return i;
    return -1;
}

ChatSession* TabListModel::addSession(qint64 conversationId, qint64 leaf) {
    auto* s = new ChatSession(conversationId, store_, models_, this);
    connect(s, &ChatSession::titleChanged, this, [this, s] { sessionChanged(s, {TitleRole, Qt::DisplayRole}); });
    connect(s, &ChatSession::generatingChanged, this, [this, s] { sessionChanged(s, {GeneratingRole}); });
    connect(s, &ChatSession::leafChanged, this, &TabListModel::scheduleSave);
    connect(s, &ChatSession::retitled, this, [this, s] { emit conversationActivity(s->conversationId()); });
    connect(s, &ChatSession::replyFinished, this, [this, s] { emit conversationActivity(s->conversationId()); });
    const int at = int(sessions_.size());
    beginInsertRows({}, at, at);
    sessions_.push_back(s);
    endInsertRows();
    emit countChanged();
    s->open(leaf);
    return s;
}

void TabListModel::sessionChanged(ChatSession* session, const QList<int>& roles) {
    const int i = int(sessions_.indexOf(session));
    if (i >= 0) emit dataChanged(index(i), index(i), roles);
}

void TabListModel::openConversation(qint64 conversationId) {
    int i = indexOf(conversationId);
    if (i < 0) {
        addSession(conversationId, 0);
        i = int(sessions_.size()) - 1;
        scheduleSave();
    }
    setCurrentIndex(i);
}

void TabListModel::newConversation() {
    store_.call(
        this, [](arbor::Store& s) { return s.create_conversation(""); },
        [this](arbor::ConversationId id) {
            openConversation(id);
            emit conversationActivity(id);
        });
}

void TabListModel::closeTab(int index) {
    if (index < 0 || index >= sessions_.size()) return;
    ChatSession* s = sessions_[index];
    beginRemoveRows({}, index, index);
    sessions_.removeAt(index);
    endRemoveRows();
    emit countChanged();
    delete s;  // stops its generation and stores what it had
    if (index < current_ || current_ >= sessions_.size()) {
        current_ = sessions_.isEmpty() ? -1 : std::max(0, current_ - 1);
    }
    emit currentChanged();
    scheduleSave();
}

void TabListModel::closeConversation(qint64 conversationId) {
    if (const int i = indexOf(conversationId); i >= 0) closeTab(i);
}

void TabListModel::nextTab() {
    if (!sessions_.isEmpty()) setCurrentIndex((current_ + 1) % int(sessions_.size()));
}

void TabListModel::previousTab() {
    if (!sessions_.isEmpty()) setCurrentIndex((current_ + int(sessions_.size()) - 1) % int(sessions_.size()));
}

void TabListModel::renamed(qint64 conversationId, const QString& title) {
    if (const int i = indexOf(conversationId); i >= 0) sessions_[i]->setTitle(title);
}

void TabListModel::restore() {
    restoring_ = true;
    store_.call(
        this, [](arbor::Store& s) { return s.open_tabs(); },
        [this](std::vector<arbor::OpenTab> tabs) {
            int active = -1;
            for (const auto& tab : tabs) {
                if (indexOf(tab.conversation_id) >= 0) continue;
                addSession(tab.conversation_id, tab.leaf_id.value_or(0));
                if (tab.active) active = int(sessions_.size()) - 1;
            }
            restoring_ = false;
            setCurrentIndex(active >= 0 ? active : 0);
            emit restored();
        },
        [this](const QString&) {
            restoring_ = false;
            emit restored();
        });
}

void TabListModel::skipRestore() {
    store_.call(this, [](arbor::Store& s) { s.save_open_tabs({}); }, [this] { emit restored(); },
                [this](const QString&) { emit restored(); });
}

void TabListModel::scheduleSave() {
    if (!restoring_) saveTimer_.start();
}

void TabListModel::save() {
    std::vector<arbor::OpenTab> tabs;
    for (int i = 0; i < sessions_.size(); ++i) {
        const qint64 leaf = sessions_[i]->messages()->leafId();
        tabs.push_back({sessions_[i]->conversationId(), leaf ? std::optional<arbor::MessageId>(leaf) : std::nullopt,
                        i == current_});
    }
    store_.call(this, [tabs](arbor::Store& s) { s.save_open_tabs(tabs); }, [] {});
}

} // namespace arbor::app
