import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// The messages of the current tab's conversation along the branch shown, and the
// composer. Shows a hint when no tab is open.
Item {
    id: view
    required property ArborApp app
    property ChatSession session: null
    // The session whose messages and draft the view holds: it follows `session` only after
    // the view saved the state of the one it leaves (onSessionChanged below).
    property ChatSession shown: null
    // Each tab's unsent text and scroll position while another tab is shown, by
    // conversation id (view state: not stored).
    property var hiddenTabs: ({})
    // Ids of the long messages the user expanded ("Show more"): delegates are created
    // again on reloads and scrolling, and must come back as the user left them.
    property var expandedMessages: ({})
    readonly property bool dark: Material.theme === Material.Dark

    function openConversationSettings() { if (session) conversationSettings.open() }

    ColumnLayout {
        anchors.fill: parent
        visible: view.session !== null
        spacing: 0

        Label {
            Layout.fillWidth: true
            Layout.maximumWidth: Theme.readingWidth
            Layout.alignment: Qt.AlignHCenter
            Layout.margins: 6
            text: view.session ? view.session.error : ""
            visible: text.length > 0
            color: Theme.errorText(view.Material.theme === Material.Dark)
            wrapMode: Text.Wrap
            Accessible.role: Accessible.AlertMessage
            Accessible.name: text
        }
        Label {
            objectName: "formatNote"
            Layout.fillWidth: true
            Layout.maximumWidth: Theme.readingWidth
            Layout.alignment: Qt.AlignHCenter
            Layout.margins: 6
            text: view.session && view.session.formatNote.length > 0 ? qsTr("Note: %1.").arg(view.session.formatNote) : ""
            visible: text.length > 0
            color: Theme.secondaryText(view.dark)
            wrapMode: Text.Wrap
            Accessible.role: Accessible.StaticText
            Accessible.name: text
        }

        ListView {
            id: messageList
            objectName: "messageList"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            spacing: 10
            // The reading column: at most Theme.readingWidth wide, centred.
            leftMargin: Math.max(16, (width - Theme.readingWidth) / 2)
            rightMargin: leftMargin
            // A vertical list sets its content's x from the left margin only once, at the start.
            onLeftMarginChanged: contentX = -leftMargin
            topMargin: 12
            bottomMargin: 12
            model: view.shown ? view.shown.messages : null
            // Keeps every message's item while the conversation is shown. A ListView guesses
            // its content height from the items it holds; with one message tens of
            // thousands of pixels tall, dropping and re-creating items as they leave the
            // default 320-pixel margin makes that guess swing, the view jump, and the items
            // come and go in a loop that never settles (and re-lays out the long text each
            // time).
            cacheBuffer: 10000000
            Accessible.name: qsTr("Messages")
            ScrollBar.vertical: ScrollBar {
                // Dragging the bar moves the view without a movementStarted.
                onPressedChanged: if (pressed) messageList.pinned = null
            }
            // Stay at the bottom while a reply streams in, unless the user scrolled up.
            property bool followEnd: true
            onMovementEnded: followEnd = atYEnd
            onContentHeightChanged: {
                if (followEnd) scrollToEnd()
                else if (pinned) place(pinned)
            }
            onHeightChanged: if (followEnd) scrollToEnd()
            onCountChanged: if (followEnd) scrollToEnd()
            // A new width wraps every message anew: the text at the top of the view stays
            // there (pinned below), wherever the wrapping above it moves it. The place is the
            // one read when the view last scrolled: by the time the list's width changes,
            // the messages (whose widths follow it) may have wrapped anew already.
            property var topPlace: null
            onContentYChanged: if (!followEnd && !pinned) topPlace = placeAtTop()
            onWidthChanged: if (!followEnd && !pinned && topPlace) pinned = topPlace
            // Moves the view, keeping its items. positionViewAtEnd() instead drops every
            // item when the last one is out of view and creates them again: a message that
            // grows (a long one being laid out, a streaming reply) changes the content
            // height, and a loop of dropping and re-creating it would follow.
            function scrollToEnd() {
                contentY = Math.max(originY - topMargin, originY + contentHeight + bottomMargin - height)
            }

            // A place in the conversation: the message `top`, and in a reply the `block` and
            // the `fraction` of it above the view's top; otherwise (block -1) `offset` pixels
            // into the message. null where the view's top is between messages.
            function placeAtTop() {
                let top = indexAt(1, contentY + 1)
                if (top < 0) top = indexAt(1, contentY + 1 + spacing)
                const item = top >= 0 ? itemAtIndex(top) : null
                if (!item) return null
                const offset = contentY - item.y
                const inReply = item.placeIn(offset)
                return { top: top, block: inReply ? inReply.block : -1, fraction: inReply ? inReply.fraction : 0, offset: offset }
            }
            // Scrolls to `where` (a placeAtTop()); false when its message has no item.
            function place(where) {
                const item = itemAtIndex(where.top)
                if (!item) return false
                const inReply = where.block >= 0 ? item.yOfPlace(where.block, where.fraction) : -1
                contentY = item.y + (inReply >= 0 ? inReply : where.offset)
                return true
            }

            // While a place is pinned (a tab shown again, or the width changed; until the
            // user moves the view), every change of layout scrolls back to it: the blocks
            // were estimated anew (a tab's delegates are made again) or wrapped anew (a
            // width), so keeping what is in sight still would keep the estimate's position.
            property var pinned: null
            // The user moves the view: it neither follows the end (until a movement ends
            // there) nor keeps a pinned place.
            onMovementStarted: {
                pinned = null
                followEnd = false
            }
            onFollowEndChanged: if (followEnd) pinned = null

            // Scroll anchoring: a reply's block measured above the view (scrolling up makes
            // them a screen ahead) moved what is in sight down by `by`. Every message moves
            // up as much instead of the view scrolling down: setting contentY ends a wheel
            // notch's or a flick's movement in progress (Qt 6.4), so the scroll would stop
            // short, while the messages' own y is what the list lays them out from (it places
            // each after the first, as it does when its first item grows above the view), so
            // the move is kept by the next layout and leaves the movement alone.
            // Not while following the end, which places the view itself, nor for the first
            // message wholly above the view, which the list moves up itself.
            function keepStill(bubble, by) {
                if (followEnd) return
                if (pinned && place(pinned)) return
                if (bubble.index === 0 && bubble.y + bubble.height <= contentY) return
                for (let i = 0; i < count; ++i) {
                    const item = itemAtIndex(i)
                    if (item) item.y -= by
                }
            }

            delegate: MessageBubble {
                width: messageList.width - messageList.leftMargin - messageList.rightMargin
                isLast: index === messageList.count - 1
                app: view.app
                session: view.shown
                onShiftedInSight: by => messageList.keepStill(this, by)
                expanded: view.expandedMessages[model.id] === true
                onExpandedChanged: {
                    if ((view.expandedMessages[model.id] === true) === expanded) return
                    const all = Object.assign({}, view.expandedMessages)
                    if (expanded) all[model.id] = true
                    else delete all[model.id]
                    view.expandedMessages = all
                }
            }
        }

        Composer {
            id: composer
            objectName: "composer"
            Layout.fillWidth: true
            Layout.maximumWidth: Theme.readingWidth
            Layout.alignment: Qt.AlignHCenter
            Layout.margins: 10
            generating: view.session !== null && view.session.generating
            // A conversation on a remote server needs no local model.
            ready: view.app.model.ready || (view.session !== null && view.session.remote)
            onSendRequested: text => {
                if (view.session && view.session.send(text)) {
                    composer.clear()
                    messageList.followEnd = true
                }
            }
            onStopRequested: if (view.session) view.session.stop()
        }
    }

    // No tab open.
    ColumnLayout {
        objectName: "noConversationHint"
        anchors.centerIn: parent
        width: Math.min(parent.width - 40, 420)
        visible: view.session === null
        spacing: 12
        Label {
            Layout.fillWidth: true
            horizontalAlignment: Text.AlignHCenter
            wrapMode: Text.Wrap
            text: qsTr("Start a new conversation with Ctrl+N, or open one from the list.")
            color: Theme.secondaryText(view.dark)
        }
        Button {
            Layout.alignment: Qt.AlignHCenter
            text: qsTr("New conversation")
            icon.source: "icons/plus.png"
            highlighted: true
            onClicked: view.app.tabs.newConversation()
        }
    }

    // A conversation without messages yet: what to do, over the empty list.
    ColumnLayout {
        objectName: "emptyConversationHint"
        x: (parent.width - width) / 2
        y: Math.max(0, (messageList.height - height) / 2)
        width: Math.min(parent.width - 40, 460)
        visible: view.shown !== null && view.session === view.shown && messageList.count === 0
        spacing: 8
        Label {
            Layout.fillWidth: true
            horizontalAlignment: Text.AlignHCenter
            wrapMode: Text.Wrap
            text: view.session && view.session.remote ? qsTr("Ask %1 anything").arg(view.app.picker.currentRemote)
                  : view.app.model.ready ? qsTr("Ask %1 anything").arg(view.app.model.name) : qsTr("New conversation")
            font.pixelSize: Theme.headlineSize
        }
        Label {
            Layout.fillWidth: true
            horizontalAlignment: Text.AlignHCenter
            wrapMode: Text.Wrap
            text: qsTr("Type below: Enter sends, Shift+Enter starts a new line. "
                       + "Its system prompt and sampling are in the conversation settings (the sliders at the top right).")
            color: Theme.secondaryText(view.dark)
        }
    }

    onSessionChanged: {
        if (shown) {
            // The place as pixels into the message at the top: the tab comes back at the
            // same width, where those pixels hold the same text once its blocks are measured.
            const where = messageList.placeAtTop()
            hiddenTabs[shown.conversationId] = {
                draft: composer.text,
                followEnd: messageList.followEnd || !where,
                where: where ? { top: where.top, block: -1, offset: where.offset } : null
            }
        }
        shown = session
        const saved = session ? hiddenTabs[session.conversationId] : undefined
        if (saved) delete hiddenTabs[session.conversationId]
        composer.text = saved ? saved.draft : ""
        messageList.followEnd = saved ? saved.followEnd : true
        messageList.pinned = null
        messageList.topPlace = null
        messageList.forceLayout()
        if (messageList.followEnd) {
            messageList.scrollToEnd()
        } else {
            // Placed from the item's own y (what the offset was measured from): adding the
            // offset to where positionViewAtIndex left the view missed by the list's margins
            // whenever the items above had been laid out again.
            messageList.positionViewAtIndex(saved.where.top, ListView.Beginning)
            if (!messageList.place(saved.where)) messageList.contentY += saved.where.offset
            messageList.pinned = saved.where
        }
        if (session) composer.focusInput()
    }

    ConversationSettingsDialog {
        id: conversationSettings
        session: view.session
        settings: view.app.settings
        parent: Overlay.overlay
        onClosed: composer.focusInput()
        anchors.centerIn: parent
    }
}
