import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts

// The message input: Enter sends, Shift+Enter inserts a newline; while a reply is
// generated the button stops it.
RowLayout {
    id: composer
    property bool generating: false
    property bool ready: true
    property alias text: input.text
    signal sendRequested(string text)
    signal stopRequested()

    function clear() { input.clear() }
    function focusInput() { input.forceActiveFocus() }
    function submit() {
        if (!composer.generating && composer.ready && input.text.trim().length > 0)
            composer.sendRequested(input.text)
    }

    spacing: 8

    ScrollView {
        Layout.fillWidth: true
        Layout.preferredHeight: Math.min(160, Math.max(48, input.implicitHeight))
        TextArea {
            id: input
            objectName: "composerInput"
            wrapMode: TextEdit.Wrap
            font.pixelSize: Theme.bodySize
            placeholderTextColor: Theme.secondaryText(composer.Material.theme === Material.Dark)
            placeholderText: composer.ready ? qsTr("Message (Enter to send, Shift+Enter for a new line)")
                                            : qsTr("Waiting for the model…")
            Accessible.name: qsTr("Message")
            selectByMouse: true
            Keys.onPressed: event => {
                if ((event.key === Qt.Key_Return || event.key === Qt.Key_Enter)
                        && !(event.modifiers & Qt.ShiftModifier)) {
                    composer.submit()
                    event.accepted = true
                }
            }
        }
    }

    RoundButton {
        objectName: "sendButton"
        text: composer.generating ? qsTr("Stop") : qsTr("Send")
        display: AbstractButton.IconOnly
        icon.source: composer.generating ? "icons/stop.png" : "icons/send.png"
        icon.width: Theme.iconSize
        icon.height: Theme.iconSize
        icon.color: !enabled ? Theme.secondaryText(Material.theme === Material.Dark)
                  : highlighted ? Material.primaryHighlightedTextColor : Material.foreground
        ToolTip.visible: hovered
        ToolTip.delay: 500
        ToolTip.text: composer.generating ? qsTr("Stop (Esc)") : qsTr("Send (Enter)")
        Layout.alignment: Qt.AlignBottom
        enabled: composer.generating || (composer.ready && input.text.trim().length > 0)
        highlighted: !composer.generating
        Accessible.name: composer.generating ? qsTr("Stop generating") : qsTr("Send message")
        onClicked: composer.generating ? composer.stopRequested() : composer.submit()
    }
}
