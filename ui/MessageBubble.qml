import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// One message: the text (a reply as markdown with code blocks), branch navigation when
// it has siblings, copy / edit / regenerate, and under a reply its stats. A reply that
// reasons first (<think>, harmony analysis) shows its reasoning collapsed above the answer
// (the model's `reasoning` and `answer` roles: a view of the stored text, markup removed).
//
// Nothing here binds to a streaming reply's whole text (`model.text` changes with every
// token): the markdown view takes the answer's pieces, and the rest reads the text once
// the reply is finished or when asked (Copy). The reasoning's text is read while it is
// expanded only.
Item {
    id: bubble
    // What is in sight of a reply moved by `by` pixels (MarkdownView.shiftedInSight).
    signal shiftedInSight(real by)
    required property int index
    required property var model
    required property ArborApp app
    required property ChatSession session

    readonly property bool isUser: model.role === MessageRole.User
    readonly property bool isReply: model.role === MessageRole.Assistant
    readonly property bool streaming: model.state === MessageState.Streaming
    property bool isLast: false
    // A reply that stopped at max tokens can go on (the same message grows).
    readonly property bool cutAtLength: isReply && !streaming && isLast
                                        && model.stats.finishReason === ReplyStats.Length
    property bool editing: false
    readonly property bool dark: Material.theme === Material.Dark

    // A long message of the user (a pasted text) shows its start until "Show more".
    readonly property int collapsedChars: 1200
    readonly property int collapsedLines: 16
    readonly property int collapsedAt: isReply ? -1 : cutOf(model.text)
    readonly property bool collapsible: collapsedAt >= 0
    property bool expanded: false
    // The reasoning of a reply: shown when the user expands it.
    readonly property bool hasReasoning: isReply && (model.reasoningOpen || model.reasoning.length > 0)
    readonly property bool thinking: streaming && model.reasoningOpen
    property bool reasoningExpanded: false
    // Counted once the reasoning is complete ("Thinking…" until then).
    readonly property int reasoningWords: !hasReasoning || thinking ? 0
                                          : model.reasoning.split(/\s+/).filter(word => word.length > 0).length
    readonly property string shortText: isReply ? "" : collapsible ? model.text.slice(0, collapsedAt) + "…" : model.text

    // The first message the model still sees, the ones above it left out of its context.
    readonly property bool firstInContext: session.omittedMessages > 0 && index === session.omittedMessages
    implicitHeight: card.y + card.implicitHeight
    Accessible.role: Accessible.ListItem
    Accessible.name: (isUser ? qsTr("You") : qsTr("Assistant")) + ": "
                     + (!isReply ? shortText : streaming ? qsTr("writing a reply") : model.answer)

    // A place `into` pixels below the bubble's top, in a reply's terms: the block there and
    // the fraction of it above that line (which survives the block wrapping anew at another
    // width). null outside the reply's blocks.
    function placeIn(into) {
        const text = replyText.item
        if (!text || text.blockCount === 0) return null
        const y = into - text.mapToItem(bubble, 0, 0).y
        const block = y >= 0 ? text.blockAt(y) : -1
        if (block < 0) return null
        const height = text.blockHeight(block), top = text.blockTop(block)
        if (y > top + height) return null
        return { block: block, fraction: height > 0 ? (y - top) / height : 0 }
    }
    // How far below the bubble's top that place is now; -1 when the reply has no such block.
    function yOfPlace(block, fraction) {
        const text = replyText.item
        if (!text || block < 0 || block >= text.blockCount) return -1
        return text.mapToItem(bubble, 0, 0).y + text.blockTop(block) + fraction * text.blockHeight(block)
    }

    // Where a long text is cut for its collapsed view, -1 when it is short enough.
    function cutOf(text) {
        let end = -1
        for (let line = 0; line < collapsedLines; ++line) {
            end = text.indexOf("\n", end + 1)
            if (end < 0 || end >= collapsedChars) break
        }
        if (end >= 0 && end < collapsedChars) return text.slice(end).trim().length > 0 ? end : -1
        if (text.length <= collapsedChars) return -1
        // Not between the two halves of a surrogate pair (an emoji).
        const code = text.charCodeAt(collapsedChars - 1)
        return code >= 0xD800 && code <= 0xDBFF ? collapsedChars - 1 : collapsedChars
    }

    // How wide the user's card needs to be for its (short) text, from the font alone:
    // never from the laid-out text, whose wrapping depends on that width. Lines longer
    // than fit anyway are measured by their first characters only.
    function naturalTextWidth(text) {
        let widest = 0
        for (const line of text.split("\n"))
            widest = Math.max(widest, userMetrics.advanceWidth(line.slice(0, 240)))
        return Math.ceil(widest)
    }
    FontMetrics {
        id: userMetrics
        font: userText.font
    }

    OmittedTurnsMarker {
        id: omittedMarker
        visible: bubble.firstInContext
        width: bubble.width
        count: bubble.session.omittedMessages
    }
    Pane {
        id: card
        objectName: bubble.isUser ? "userCard" : "replyCard"
        y: bubble.firstInContext ? omittedMarker.height + 10 : 0
        width: !bubble.isUser ? bubble.width
             : bubble.editing ? bubble.width * 0.8
             : Math.min(bubble.width * 0.8, Math.max(240, bubble.naturalTextWidth(bubble.shortText) + leftPadding + rightPadding))
        anchors.right: bubble.isUser ? bubble.right : undefined
        padding: 10
        background: Rectangle {
            radius: 8
            color: bubble.isUser ? Theme.userBubble(bubble.dark) : "transparent"
            border.color: bubble.isUser ? "transparent" : Theme.outline(bubble.dark)
        }

        ColumnLayout {
            id: column
            width: parent.width
            spacing: 6

            Label {
                text: bubble.isUser ? qsTr("You") : bubble.isReply ? qsTr("Assistant") : qsTr("System")
                font.bold: true
                font.pixelSize: Theme.captionSize
                color: Theme.secondaryText(bubble.dark)
            }

            // The text: plain for the user's messages, markdown for replies.
            TextEdit {
                id: userText
                objectName: "userText"
                visible: !bubble.isReply && !bubble.editing
                Layout.fillWidth: true
                Layout.preferredWidth: column.width
                text: bubble.isReply ? "" : bubble.expanded ? bubble.model.text : bubble.shortText
                readOnly: true
                selectByMouse: true
                wrapMode: TextEdit.Wrap
                color: bubble.Material.foreground
                font.pixelSize: Theme.bodySize
                textFormat: TextEdit.PlainText
                Accessible.name: text
            }
            Button {
                objectName: "showMoreButton"
                visible: bubble.collapsible && !bubble.editing
                flat: true
                text: !bubble.collapsible ? ""
                    : bubble.expanded ? qsTr("Show less") : qsTr("Show more (%1 characters)").arg(bubble.model.text.length)
                Accessible.name: bubble.expanded ? qsTr("Show less of the message") : qsTr("Show all of the message")
                onClicked: bubble.expanded = !bubble.expanded
            }
            // The reply's reasoning, collapsed under a toggle that says how long it is.
            AbstractButton {
                id: reasoningToggle
                objectName: "reasoningToggle"
                visible: bubble.hasReasoning
                text: bubble.thinking ? qsTr("Thinking…") : bubble.reasoningWords === 1 ? qsTr("Thought for 1 word")
                    : qsTr("Thought for %1 words").arg(bubble.reasoningWords)
                padding: 2
                Accessible.role: Accessible.Button
                Accessible.name: (bubble.reasoningExpanded ? qsTr("Hide the reasoning: %1") : qsTr("Show the reasoning: %1")).arg(text)
                onClicked: bubble.reasoningExpanded = !bubble.reasoningExpanded
                HoverHandler { cursorShape: Qt.PointingHandCursor }
                contentItem: Row {
                    spacing: 6
                    Label {
                        text: "▸"
                        rotation: bubble.reasoningExpanded ? 90 : 0
                        color: Theme.secondaryText(bubble.dark)
                        font.pixelSize: Theme.bodySize
                    }
                    Label {
                        text: reasoningToggle.text
                        color: Theme.secondaryText(bubble.dark)
                        font.pixelSize: Theme.bodySize
                        font.italic: bubble.thinking
                    }
                }
                background: null
            }
            TextEdit {
                objectName: "reasoningText"
                visible: bubble.hasReasoning && bubble.reasoningExpanded
                Layout.fillWidth: true
                Layout.preferredWidth: column.width
                // Plain text: reasoning is a draft, not a document to render.
                text: visible ? bubble.model.reasoning : ""
                readOnly: true
                selectByMouse: true
                wrapMode: TextEdit.Wrap
                leftPadding: 12
                bottomPadding: 8  // more room above the answer than between its paragraphs
                color: Theme.secondaryText(bubble.dark)
                font.pixelSize: Theme.bodySize
                textFormat: TextEdit.PlainText
                Accessible.name: qsTr("Reasoning: %1").arg(text)
                Rectangle {  // sets the reasoning apart from the answer below it
                    width: 2
                    height: parent.height - parent.bottomPadding
                    color: Theme.outline(bubble.dark)
                }
            }
            Loader {
                id: replyText
                // Only a reply is markdown: a user's text is never parsed as such.
                active: bubble.isReply
                visible: active
                Layout.fillWidth: true
                sourceComponent: Component {
                    MarkdownView {
                        app: bubble.app
                        messages: bubble.session.messages
                        messageId: bubble.model.id
                        onShiftedInSight: by => bubble.shiftedInSight(by)
                    }
                }
            }
            BusyIndicator {
                // Until the reply's first block shows; "Thinking…" says it while it reasons.
                visible: bubble.streaming && !bubble.thinking && (!replyText.item || replyText.item.blockCount === 0)
                running: visible
                Layout.preferredHeight: 28
                Layout.preferredWidth: 28
                Accessible.name: qsTr("Waiting for the reply")
            }

            // Editing a message of the user: a new sibling version, then its reply.
            ColumnLayout {
                visible: bubble.editing
                Layout.fillWidth: true
                TextArea {
                    id: editor
                    objectName: "editField"
                    Layout.fillWidth: true
                    wrapMode: TextEdit.Wrap
                    Accessible.name: qsTr("Edit message")
                }
                RowLayout {
                    Button {
                        text: qsTr("Save and send")
                        highlighted: true
                        flat: true
                        contentItem: ButtonText { button: parent }
                        enabled: !bubble.session.generating && editor.text.trim().length > 0
                        onClicked: if (bubble.session.edit(bubble.index, editor.text)) bubble.editing = false
                    }
                    Button {
                        text: qsTr("Cancel")
                        flat: true
                        onClicked: bubble.editing = false
                    }
                }
            }

            // The actions, then the stats, which wrap below them when the line is full.
            Flow {
                Layout.fillWidth: true
                spacing: 2
                visible: !bubble.editing

                // "< 2/3 >" between the message's siblings
                RowLayout {
                    visible: bubble.model.branchCount > 1
                    spacing: 0
                    IconButton {
                        text: qsTr("Previous version")
                        iconName: "chevron-left"
                        enabled: bubble.model.branchIndex > 0
                        onClicked: bubble.session.messages.previousBranch(bubble.index)
                    }
                    Label {
                        objectName: "branchLabel"
                        text: (bubble.model.branchIndex + 1) + "/" + bubble.model.branchCount
                        Accessible.name: qsTr("Version %1 of %2").arg(bubble.model.branchIndex + 1).arg(bubble.model.branchCount)
                    }
                    IconButton {
                        text: qsTr("Next version")
                        iconName: "chevron-right"
                        enabled: bubble.model.branchIndex + 1 < bubble.model.branchCount
                        onClicked: bubble.session.messages.nextBranch(bubble.index)
                    }
                }
                IconButton {
                    objectName: "copyMessageButton"
                    text: qsTr("Copy")
                    iconName: "copy"
                    Accessible.name: qsTr("Copy message")
                    // A reply's answer without its reasoning (the reasoning when it has no answer).
                    onClicked: bubble.app.copyText(!bubble.isReply ? bubble.model.text
                                                   : bubble.model.answer || bubble.model.reasoning)
                }
                IconButton {
                    visible: bubble.isUser
                    text: qsTr("Edit")
                    iconName: "pencil"
                    enabled: !bubble.session.generating
                    Accessible.name: qsTr("Edit message")
                    onClicked: {
                        editor.text = bubble.model.text
                        bubble.editing = true
                        editor.forceActiveFocus()
                    }
                }
                IconButton {
                    visible: bubble.isReply && !bubble.streaming
                    text: qsTr("Regenerate")
                    iconName: "regenerate"
                    enabled: !bubble.session.generating && bubble.app.model.ready
                    Accessible.name: qsTr("Regenerate reply")
                    onClicked: bubble.session.regenerate(bubble.index)
                }
                ToolButton {
                    objectName: "continueButton"
                    visible: bubble.cutAtLength
                    text: qsTr("Continue")
                    flat: true
                    contentItem: ButtonText { button: parent }
                    enabled: !bubble.session.generating && bubble.app.model.ready
                    Accessible.name: qsTr("Continue the reply")
                    ToolTip.visible: hovered
                    ToolTip.text: qsTr("The reply stopped at the max tokens setting; generate more of it")
                    onClicked: bubble.session.continueReply(bubble.index)
                }
                Label {
                    objectName: "statsLabel"
                    visible: bubble.isReply && text.length > 0
                    // Beside the buttons when it fits, else on its own lines below them.
                    width: Math.min(implicitWidth, parent.width)
                    height: Math.max(implicitHeight, 40)
                    leftPadding: 8
                    verticalAlignment: Text.AlignVCenter
                    wrapMode: Text.Wrap
                    // A reply left "stopped" with no figures was cut off when the app
                    // closed or crashed (the store marks such replies at start).
                    text: !bubble.streaming ? (ReplyStatsText.format(bubble.model.stats)
                                               || (bubble.model.state === MessageState.Stopped
                                                   ? qsTr("interrupted: the app closed before this reply finished") : ""))
                        : bubble.session.prefillTotal > 0
                          ? qsTr("Reading prompt: %1 of %2 tokens").arg(bubble.session.prefillDone).arg(bubble.session.prefillTotal)
                          : qsTr("generating…")
                    color: Theme.secondaryText(bubble.dark)
                    font.pixelSize: Theme.captionSize
                    Accessible.name: qsTr("Reply statistics: %1").arg(text)
                }
            }
        }
    }
}
