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
            ScrollBar.vertical: ScrollBar {}
            // Stay at the bottom while a reply streams in, unless the user scrolled up.
            property bool followEnd: true
            onMovementEnded: followEnd = atYEnd
            onContentHeightChanged: if (followEnd) scrollToEnd()
            onHeightChanged: if (followEnd) scrollToEnd()
            onCountChanged: if (followEnd) scrollToEnd()
            // Moves the view, keeping its items. positionViewAtEnd() instead drops every
            // item when the last one is out of view and creates them again: a message that
            // grows (a long one being laid out, a streaming reply) changes the content
            // height, and a loop of dropping and re-creating it would follow.
            function scrollToEnd() {
                contentY = Math.max(originY - topMargin, originY + contentHeight + bottomMargin - height)
            }
            // Scroll anchoring: a reply's block measured above the view (scrolling up makes
            // them a screen ahead) moved what is in sight by `by`; scrolling as much keeps it
            // still. Not while following the end, which places the view itself, nor for the
            // first message wholly above the view, which the list moves up itself.
            // While a tab's saved position is pinned (from showing the tab until the user
            // moves the view), a measurement places the view again at the saved distance
            // into the saved message instead: the blocks were estimated anew when the tab
            // came back, so keeping what is in sight would keep the estimate's position.
            property var pinned: null
            onMovementStarted: pinned = null
            onFollowEndChanged: if (followEnd) pinned = null
            function keepStill(bubble, by) {
                if (followEnd) return
                const pinnedItem = pinned ? itemAtIndex(pinned.top) : null
                if (pinnedItem) {
                    contentY = pinnedItem.y + pinned.offset
                    return
                }
                if (bubble.index === 0 && bubble.y + bubble.height <= contentY) return
                contentY += by
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
            // Scroll position as the message at the top and how far into it the view is.
            const top = messageList.indexAt(1, messageList.contentY + 1)
            const item = top >= 0 ? messageList.itemAtIndex(top) : null
            hiddenTabs[shown.conversationId] = {
                draft: composer.text,
                followEnd: messageList.followEnd || top < 0,
                top: top,
                offset: item ? messageList.contentY - item.y : 0
            }
        }
        shown = session
        const saved = session ? hiddenTabs[session.conversationId] : undefined
        if (saved) delete hiddenTabs[session.conversationId]
        composer.text = saved ? saved.draft : ""
        messageList.followEnd = saved ? saved.followEnd : true
        messageList.pinned = null
        messageList.forceLayout()
        if (messageList.followEnd) {
            messageList.scrollToEnd()
        } else {
            // Placed from the item's own y (what the offset was measured from): adding the
            // offset to where positionViewAtIndex left the view missed by the list's margins
            // whenever the items above had been laid out again.
            messageList.positionViewAtIndex(saved.top, ListView.Beginning)
            const item = messageList.itemAtIndex(saved.top)
            if (item) messageList.contentY = item.y + saved.offset
            else messageList.contentY += saved.offset
            messageList.pinned = { top: saved.top, offset: saved.offset }
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
