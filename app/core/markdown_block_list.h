// Lays out a MarkdownBlockModel's blocks top to bottom, `spacing` apart, and creates the
// delegate items of the blocks in sight only: the part of the list that the window and
// its clipping ancestors (the chat's list) show, and `cacheMargin` pixels above and below
// it. A 20,000-word reply holds a few dozen items, not a thousand, so a streamed token
// costs the same at its end as at its start.
//
// The list's height is that of all blocks: each block's height as its item was measured
// (cached in the model, kept while the block is out of sight), else an estimate from its
// text and the font metrics given. An item is measured when created and whenever its
// height changes; the blocks below it move.
//
// The list follows every ancestor's geometry (scrolling moves a flickable's content item,
// a list moves its delegates), so it recomputes what is in sight when any of them moves.
//
// A block measured above what is in sight (scrolling up through a long reply makes its
// items a margin ahead) moves the blocks in sight by the difference from its estimate:
// shiftedInSight tells a view that scrolls the list, which scrolls as much to keep them
// still. An item whose `keep` property is true (a block holding the user's selection)
// stays out of sight too.
#pragma once

#include "markdown_block_model.h"

#include <QPointer>
#include <QQmlComponent>
#include <QQuickItem>
#include <QtQml/qqmlregistration.h>

#include <vector>

namespace arbor::app {

class MarkdownBlockList : public QQuickItem {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(arbor::app::MarkdownBlockModel* model READ model WRITE setModel NOTIFY modelChanged)
    // Created with the required properties kind, text and language (the model's roles).
    Q_PROPERTY(QQmlComponent* delegate READ delegate WRITE setDelegate NOTIFY delegateChanged)
    Q_PROPERTY(qreal spacing READ spacing WRITE setSpacing NOTIFY layoutChanged)
    Q_PROPERTY(qreal cacheMargin READ cacheMargin WRITE setCacheMargin NOTIFY layoutChanged)
    // For the estimates of blocks never measured at the current width: the prose font's
    // line height and mean character width, the code font's, and the height a code block
    // adds to its lines (its header and padding).
    Q_PROPERTY(qreal lineHeight MEMBER lineHeight_ NOTIFY layoutChanged)
    Q_PROPERTY(qreal charWidth MEMBER charWidth_ NOTIFY layoutChanged)
    Q_PROPERTY(qreal codeLineHeight MEMBER codeLineHeight_ NOTIFY layoutChanged)
    Q_PROPERTY(qreal codeCharWidth MEMBER codeCharWidth_ NOTIFY layoutChanged)
    Q_PROPERTY(qreal codeChrome MEMBER codeChrome_ NOTIFY layoutChanged)
    Q_PROPERTY(int itemCount READ itemCount NOTIFY itemCountChanged)
public:
    explicit MarkdownBlockList(QQuickItem* parent = nullptr);
    ~MarkdownBlockList() override;

    MarkdownBlockModel* model() const { return model_; }
    void setModel(MarkdownBlockModel* model);
    QQmlComponent* delegate() const { return delegate_; }
    void setDelegate(QQmlComponent* delegate);
    qreal spacing() const { return spacing_; }
    void setSpacing(qreal spacing);
    qreal cacheMargin() const { return cacheMargin_; }
    void setCacheMargin(qreal margin);
    // How many blocks have an item now.
    int itemCount() const { return int(items_.size()); }
    // The item of block `row`, null when the block is out of sight.
    Q_INVOKABLE QQuickItem* itemAt(int row) const;
    // Where block `row` starts in the list, and how tall it is (measured, else estimated).
    Q_INVOKABLE qreal blockTop(int row);
    Q_INVOKABLE qreal blockHeight(int row);
    // The block at `y` in the list (the first above 0, the last below the end), -1 when
    // there are none.
    Q_INVOKABLE int blockAt(qreal y);
    // Lays the list out now rather than before the next frame.
    Q_INVOKABLE void forceLayout() { updatePolish(); }

signals:
    void modelChanged();
    void delegateChanged();
    void layoutChanged();
    void itemCountChanged();
    // The blocks in sight moved down by `by` pixels (up when negative): a block above
    // them changed height.
    void shiftedInSight(qreal by);

protected:
    void updatePolish() override;
    void geometryChange(const QRectF& newGeometry, const QRectF& oldGeometry) override;
    void itemChange(ItemChange change, const ItemChangeData& value) override;
    void componentComplete() override;

private slots:
    // An item's `keep` changed: it may go now.
    void keepChanged() { polish(); }

private:
    struct Placed {
        int row;
        QQuickItem* item;
    };

    qreal heightOf(int row) const;
    qreal estimate(const MarkdownBlock& block, qreal width) const;
    void updateTops();
    int rowAt(qreal y);
    // The part of the list in sight, in its coordinates (empty when none is).
    QRectF sight() const;
    void watchAncestors();
    QQuickItem* create(int row);
    void measure(int row, QQuickItem* item);
    void release(QQuickItem* item);
    void destroyItems();
    void relayoutFrom(int row);

    QPointer<MarkdownBlockModel> model_;
    QPointer<QQmlComponent> delegate_;
    qreal spacing_ = 0, cacheMargin_ = 400;
    qreal lineHeight_ = 20, charWidth_ = 8, codeLineHeight_ = 18, codeCharWidth_ = 8, codeChrome_ = 48;
    std::vector<Placed> items_;      // by row, the blocks in sight
    std::vector<qreal> tops_;        // where each block starts; valid below dirtyFrom_
    int dirtyFrom_ = 0;
    std::vector<QMetaObject::Connection> ancestors_;
    QList<QMetaObject::Connection> modelConnections_;
};

} // namespace arbor::app
