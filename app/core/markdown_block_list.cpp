#include "markdown_block_list.h"

#include <QQmlContext>
#include <QQmlEngine>
#include <QQmlProperty>
#include <QQuickWindow>

#include <algorithm>
#include <cmath>

namespace arbor::app {

namespace {

// Lines of `length` characters wrapped at `perLine` characters (an empty line is one).
qreal wrappedLines(qsizetype length, qreal perLine) {
    return std::max<qreal>(1, std::ceil(qreal(length) / perLine));
}

bool isTableRule(QStringView line) {
    for (QChar c : line)
        if (c != QLatin1Char('|') && c != QLatin1Char('-') && c != QLatin1Char(':') && !c.isSpace()) return false;
    return true;
}

} // namespace

MarkdownBlockList::MarkdownBlockList(QQuickItem* parent) : QQuickItem(parent) {
    connect(this, &MarkdownBlockList::layoutChanged, this, [this] { relayoutFrom(0); });
}

MarkdownBlockList::~MarkdownBlockList() {
    for (const auto& c : ancestors_) disconnect(c);
}

void MarkdownBlockList::setModel(MarkdownBlockModel* model) {
    if (model == model_) return;
    for (const auto& c : modelConnections_) disconnect(c);
    modelConnections_.clear();
    destroyItems();
    model_ = model;
    if (model) {
        modelConnections_ << connect(model, &QAbstractItemModel::rowsInserted, this, [this](const QModelIndex&, int a, int b) {
            for (Placed& p : items_)
                if (p.row >= a) p.row += b - a + 1;
            relayoutFrom(a);
        });
        modelConnections_ << connect(model, &QAbstractItemModel::rowsRemoved, this, [this](const QModelIndex&, int a, int b) {
            std::vector<Placed> kept;
            for (Placed p : items_) {
                if (p.row >= a && p.row <= b) {
                    release(p.item);
                    continue;
                }
                if (p.row > b) p.row -= b - a + 1;
                kept.push_back(p);
            }
            const bool fewer = kept.size() != items_.size();
            items_ = std::move(kept);
            if (fewer) emit itemCountChanged();
            relayoutFrom(a);
        });
        modelConnections_ << connect(model, &QAbstractItemModel::dataChanged, this,
                                     [this](const QModelIndex& a, const QModelIndex& b) {
            for (const Placed& p : items_) {
                if (p.row < a.row() || p.row > b.row()) continue;
                const MarkdownBlock& block = model_->block(p.row);
                p.item->setProperty("kind", model_->data(model_->index(p.row), MarkdownBlockModel::KindRole));
                p.item->setProperty("language", block.language);
                p.item->setProperty("text", block.text);
                measure(p.row, p.item);  // its text changed: the model forgot its height
            }
            relayoutFrom(a.row());
        });
        const auto rebuild = [this] {
            destroyItems();
            relayoutFrom(0);
        };
        modelConnections_ << connect(model, &QAbstractItemModel::modelReset, this, rebuild);
        modelConnections_ << connect(model, &QAbstractItemModel::layoutChanged, this, rebuild);
    }
    relayoutFrom(0);
    emit modelChanged();
}

void MarkdownBlockList::setDelegate(QQmlComponent* delegate) {
    if (delegate == delegate_) return;
    destroyItems();
    delegate_ = delegate;
    relayoutFrom(0);
    emit delegateChanged();
}

void MarkdownBlockList::setSpacing(qreal spacing) {
    if (spacing == spacing_) return;
    spacing_ = spacing;
    emit layoutChanged();
}

void MarkdownBlockList::setCacheMargin(qreal margin) {
    if (margin == cacheMargin_) return;
    cacheMargin_ = margin;
    emit layoutChanged();
}

QQuickItem* MarkdownBlockList::itemAt(int row) const {
    for (const Placed& p : items_)
        if (p.row == row) return p.item;
    return nullptr;
}

qreal MarkdownBlockList::blockTop(int row) {
    updateTops();
    return row >= 0 && row < int(tops_.size()) ? tops_[row] : 0;
}

qreal MarkdownBlockList::blockHeight(int row) {
    return model_ && row >= 0 && row < model_->rowCount() ? heightOf(row) : 0;
}

int MarkdownBlockList::blockAt(qreal y) {
    if (!model_ || model_->rowCount() == 0) return -1;
    updateTops();
    return rowAt(y);
}

void MarkdownBlockList::relayoutFrom(int row) {
    dirtyFrom_ = std::min(dirtyFrom_, std::max(row, 0));
    polish();
}

qreal MarkdownBlockList::heightOf(int row) const {
    const qreal measured = model_->measuredHeight(row, width());
    if (measured >= 0) return measured;
    const MarkdownBlock& block = model_->block(row);
    qreal before = 0;
    const qreal last = model_->lastHeight(row, &before);
    // Measured at another width: scaled as the estimates at the two widths are.
    if (last >= 0) return last * estimate(block, width()) / estimate(block, before);
    return estimate(block, width());
}

qreal MarkdownBlockList::estimate(const MarkdownBlock& block, qreal width) const {
    if (block.kind == MarkdownBlock::Kind::Code) {
        const qreal perLine = std::max<qreal>(1, std::floor((width - 12) / codeCharWidth_));
        qreal lines = 0;
        for (QStringView line : QStringView(block.text).split(QLatin1Char('\n'))) lines += wrappedLines(line.size(), perLine);
        return codeChrome_ + lines * codeLineHeight_;
    }
    const qreal perLine = std::max<qreal>(1, std::floor(width / charWidth_));
    qreal height = 8;  // the document's margins
    for (QStringView line : QStringView(block.text).split(QLatin1Char('\n'))) {
        line = line.trimmed();
        if (line.isEmpty())
            height += lineHeight_ / 2;
        else if (line.startsWith(QLatin1Char('#')))
            height += 1.6 * lineHeight_ * wrappedLines(line.size(), perLine / 1.5);
        else if (line.startsWith(QLatin1Char('|')))
            height += isTableRule(line) ? 0 : 1.3 * lineHeight_;
        else
            height += lineHeight_ * wrappedLines(line.size(), perLine);
    }
    return height;
}

void MarkdownBlockList::updateTops() {
    const int n = model_ ? model_->rowCount() : 0;
    tops_.resize(size_t(n) + 1);
    if (dirtyFrom_ > n) dirtyFrom_ = n;
    for (int i = dirtyFrom_; i <= n; ++i) tops_[i] = i == 0 ? 0 : tops_[i - 1] + heightOf(i - 1) + spacing_;
    dirtyFrom_ = n + 1;
}

int MarkdownBlockList::rowAt(qreal y) {
    const int n = int(tops_.size()) - 1;
    const auto after = std::upper_bound(tops_.begin(), tops_.begin() + n, y);
    return std::clamp(int(after - tops_.begin()) - 1, 0, std::max(n - 1, 0));
}

QRectF MarkdownBlockList::sight() const {
    if (!window() || !isVisible()) return {};
    QRectF area = mapRectFromScene(QRectF(QPointF(0, 0), QSizeF(window()->size())));
    for (const QQuickItem* a = parentItem(); a; a = a->parentItem())
        if (a->clip()) area &= mapRectFromItem(a, a->clipRect());
    return area;
}

void MarkdownBlockList::watchAncestors() {
    for (const auto& c : ancestors_) disconnect(c);
    ancestors_.clear();
    for (QQuickItem* a = parentItem(); a; a = a->parentItem()) {
        for (auto signal : {&QQuickItem::xChanged, &QQuickItem::yChanged, &QQuickItem::widthChanged,
                            &QQuickItem::heightChanged, &QQuickItem::visibleChanged})
            ancestors_.push_back(connect(a, signal, this, &QQuickItem::polish));
        ancestors_.push_back(connect(a, &QQuickItem::parentChanged, this, &MarkdownBlockList::watchAncestors));
    }
    if (QQuickWindow* w = window()) {
        ancestors_.push_back(connect(w, &QWindow::heightChanged, this, &QQuickItem::polish));
        ancestors_.push_back(connect(w, &QWindow::widthChanged, this, &QQuickItem::polish));
    }
    polish();
}

QQuickItem* MarkdownBlockList::create(int row) {
    const MarkdownBlock& block = model_->block(row);
    QQmlContext* context = delegate_->creationContext() ? delegate_->creationContext() : qmlContext(this);
    QObject* object = delegate_->createWithInitialProperties(
        {{QStringLiteral("kind"), model_->data(model_->index(row), MarkdownBlockModel::KindRole)},
         {QStringLiteral("text"), block.text},
         {QStringLiteral("language"), block.language},
         {QStringLiteral("width"), width()}},
        context);
    auto* item = qobject_cast<QQuickItem*>(object);
    if (!item) {
        qWarning("MarkdownBlockList: the delegate is not an Item: %s", qPrintable(delegate_->errorString()));
        delete object;
        return nullptr;
    }
    QQmlEngine::setObjectOwnership(item, QQmlEngine::CppOwnership);
    item->setParent(this);
    item->setParentItem(this);
    connect(item, &QQuickItem::heightChanged, this, [this, item] {
        for (const Placed& p : items_)
            if (p.item == item) measure(p.row, item);
    });
    const QQmlProperty keep(item, QStringLiteral("keep"));
    if (keep.hasNotifySignal()) keep.connectNotifySignal(this, SLOT(keepChanged()));
    return item;
}

void MarkdownBlockList::measure(int row, QQuickItem* item) {
    const qreal height = item->height();
    if (model_->measuredHeight(row, width()) == height) return;
    updateTops();
    const qreal before = heightOf(row);  // what the blocks below are placed by
    const QRectF area = sight();
    const bool above = !area.isEmpty() && tops_[row] + before <= area.top();
    model_->setMeasuredHeight(row, width(), height);
    relayoutFrom(row + 1);
    if (above && height != before) emit shiftedInSight(height - before);
}

void MarkdownBlockList::release(QQuickItem* item) {
    // Out of the scene and unmeasured now; deleted once the signal that let it go returns.
    item->setParentItem(nullptr);
    disconnect(item, nullptr, this, nullptr);
    item->deleteLater();
}

void MarkdownBlockList::destroyItems() {
    if (items_.empty()) return;
    for (const Placed& p : items_) release(p.item);
    items_.clear();
    emit itemCountChanged();
}

void MarkdownBlockList::updatePolish() {
    if (!model_ || !delegate_ || !isComponentComplete()) return;
    const size_t itemsBefore = items_.size();
    // New items are measured as they are made, which moves the blocks below them and may
    // bring more into sight: a few rounds settle it.
    for (int round = 0; round < 8; ++round) {
        updateTops();
        const int n = model_->rowCount();
        const qreal total = n ? tops_[n] - spacing_ : 0;
        setImplicitHeight(total);
        const QRectF area = sight();
        int first = 0, last = -1;
        if (n > 0 && !area.isEmpty()) {
            const qreal top = area.top() - cacheMargin_, bottom = area.bottom() + cacheMargin_;
            if (bottom >= 0 && top <= total) {
                first = rowAt(std::max<qreal>(top, 0));
                last = rowAt(std::min(bottom, total));
            }
        }
        // Kept: the items in sight and those asked to stay; items_ stays in row order.
        std::vector<Placed> placed;
        for (const Placed& p : items_) {
            if ((p.row >= first && p.row <= last) || p.item->property("keep").toBool()) {
                placed.push_back(p);
            } else {
                release(p.item);
            }
        }
        items_.clear();
        size_t next = 0;
        for (int row = first; row <= last; ++row) {
            for (; next < placed.size() && placed[next].row < row; ++next) items_.push_back(placed[next]);
            if (next < placed.size() && placed[next].row == row) {
                items_.push_back(placed[next++]);
            } else if (QQuickItem* item = create(row)) {
                items_.push_back({row, item});
                measure(row, item);
            }
        }
        items_.insert(items_.end(), placed.begin() + qsizetype(next), placed.end());
        const bool moved = dirtyFrom_ <= n;  // a new item's height differed from its estimate
        updateTops();
        setImplicitHeight(n ? tops_[n] - spacing_ : 0);
        for (const Placed& p : items_) {
            p.item->setY(tops_[p.row]);
            p.item->setWidth(width());
        }
        if (!moved) break;
    }
    if (items_.size() != itemsBefore) emit itemCountChanged();
}

void MarkdownBlockList::geometryChange(const QRectF& newGeometry, const QRectF& oldGeometry) {
    QQuickItem::geometryChange(newGeometry, oldGeometry);
    if (newGeometry.width() != oldGeometry.width()) {
        for (const Placed& p : items_) p.item->setWidth(newGeometry.width());
        relayoutFrom(0);
    }
    polish();
}

void MarkdownBlockList::itemChange(ItemChange change, const ItemChangeData& value) {
    QQuickItem::itemChange(change, value);
    if (change == ItemSceneChange || change == ItemParentHasChanged) watchAncestors();
    if (change == ItemVisibleHasChanged) polish();
}

void MarkdownBlockList::componentComplete() {
    QQuickItem::componentComplete();
    watchAncestors();
}

} // namespace arbor::app
