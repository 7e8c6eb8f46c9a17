import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// The model in use, at the head of the window: its name, architecture and quantization
// ("SmolLM2 135M · llama · Q4_1"), with a busy indicator while a model loads. A click
// lists what can be switched to, in sections: the models on this computer (the
// library's, named the same way; those the engine cannot load are greyed, with the
// reason), then the models of the remote servers ("model @ host"; choosing one makes it
// the current conversation's, and the button shows it while that conversation is shown),
// then the way to the model library.
ToolButton {
    id: picker
    objectName: "modelPicker"
    required property ArborApp app
    signal libraryRequested()

    readonly property ModelService model: app.model
    readonly property bool dark: Material.theme === Material.Dark
    readonly property string remote: app.picker.currentRemote
    readonly property bool local: picker.remote.length === 0 && picker.model.ready
    readonly property string name: {
        if (picker.remote.length > 0) return picker.remote
        if (picker.model.state === "loading") return qsTr("Loading %1…").arg(picker.model.name)
        if (!picker.model.ready) return qsTr("Choose a model")
        return picker.model.displayName
    }
    // "architecture · quantization" of the loaded file; shown beside the name and never
    // elided, so a long name in a narrow window still leaves them readable.
    readonly property string details: picker.local ? picker.describe("", picker.model.architecture, picker.model.quantType) : ""
    readonly property string label: picker.details.length > 0 ? picker.name + " · " + picker.details : picker.name

    // "name · architecture · quantization", leaving out what is unknown.
    function describe(name: string, architecture: string, quantType: string): string {
        return [name, architecture, quantType].filter(part => part.length > 0).join(" · ")
    }

    text: label
    Accessible.name: qsTr("Model: %1. Choose another").arg(label)
    ToolTip.visible: hovered && !list.visible && ToolTip.text.length > 0
    ToolTip.delay: 500
    ToolTip.text: picker.remote.length > 0 ? picker.app.picker.currentRemoteRef : picker.model.path
    onClicked: list.opened ? list.close() : list.open()

    contentItem: RowLayout {
        spacing: 6
        BusyIndicator {
            objectName: "modelPickerBusy"
            visible: picker.app.picker.busy
            running: visible
            Layout.preferredWidth: Theme.iconSize
            Layout.preferredHeight: Theme.iconSize
            padding: 0
        }
        Label {
            objectName: "modelPickerText"
            text: picker.name
            elide: Text.ElideRight
            font.bold: picker.model.ready || picker.remote.length > 0
            Layout.fillWidth: true
            Layout.maximumWidth: implicitWidth
        }
        Label {
            objectName: "modelPickerDetails"
            visible: picker.details.length > 0
            text: "· " + picker.details
            color: Theme.secondaryText(picker.dark)
            Layout.minimumWidth: implicitWidth
        }
        Label {
            text: "\u25be"  // a small down-pointing triangle: the button opens a list
            color: Theme.secondaryText(picker.dark)
        }
    }

    Popup {
        id: list
        y: picker.height
        focus: true  // so that Escape closes it
        // As wide as the window leaves right of the button, 440 at most.
        width: Math.min(440, picker.Window.width - picker.mapToItem(null, 0, 0).x - 8)
        height: Math.min(models.contentHeight + topPadding + bottomPadding, picker.Window.height * 0.7)
        padding: 0
        topPadding: 6
        bottomPadding: 6
        background: Rectangle {
            color: picker.dark ? "#303030" : "#ffffff"
            border.color: Theme.outline(picker.dark)
            radius: 4
        }

        ListView {
            id: models
            objectName: "modelPickerModels"
            anchors.fill: parent
            clip: true
            boundsBehavior: Flickable.StopAtBounds
            model: picker.app.library
            Accessible.name: qsTr("Models")
            ScrollIndicator.vertical: ScrollIndicator {}

            header: Column {
                width: models.width
                Label {
                    text: qsTr("On this computer")
                    font.pixelSize: Theme.captionSize
                    font.bold: true
                    color: Theme.secondaryText(picker.dark)
                    leftPadding: 16
                    topPadding: 4
                    bottomPadding: 4
                }
                Label {
                    visible: picker.app.library.count === 0
                    width: parent.width
                    wrapMode: Text.Wrap
                    leftPadding: 16
                    rightPadding: 16
                    bottomPadding: 6
                    text: qsTr("No models in the library yet.")
                }
            }

            delegate: ItemDelegate {
                id: row
                objectName: "modelPickerEntry"
                required property string path
                required property string fileName
                required property string name
                required property string architecture
                required property string quantType
                required property string sizeText
                required property bool supported
                required property string problem
                readonly property bool inUse: path === picker.model.path && picker.remote.length === 0

                width: models.width
                enabled: supported
                highlighted: inUse
                Accessible.name: supported ? qsTr("Use %1 (%2)").arg(name).arg(fileName)
                                           : qsTr("%1 cannot be used: %2").arg(fileName).arg(problem)
                onClicked: {
                    list.close()
                    if (!row.inUse || picker.model.state === "failed") picker.app.picker.choose(row.path)
                }

                contentItem: ColumnLayout {
                    spacing: 2
                    Label {
                        objectName: "modelPickerEntryName"
                        Layout.fillWidth: true
                        elide: Text.ElideRight
                        text: picker.describe(row.name, row.architecture, row.quantType)
                              + (row.inUse ? qsTr("  (in use)") : "")
                        color: row.supported ? Material.foreground : Theme.secondaryText(picker.dark)
                        font.bold: row.inUse
                    }
                    Label {
                        objectName: "modelPickerEntryDetails"
                        Layout.fillWidth: true
                        wrapMode: row.supported ? Text.NoWrap : Text.Wrap
                        elide: Text.ElideRight
                        font.pixelSize: Theme.captionSize
                        text: row.supported ? row.fileName + " · " + row.sizeText
                                            : qsTr("%1: not supported: %2").arg(row.fileName).arg(row.problem)
                        color: Theme.secondaryText(picker.dark)
                    }
                }
            }

            footer: Column {
                width: models.width
                Label {
                    visible: picker.app.remotes.models.length > 0
                    text: qsTr("Remote servers")
                    font.pixelSize: Theme.captionSize
                    font.bold: true
                    color: Theme.secondaryText(picker.dark)
                    leftPadding: 16
                    topPadding: 8
                    bottomPadding: 4
                }
                Repeater {
                    model: picker.app.remotes.models
                    delegate: ItemDelegate {
                        id: remoteRow
                        objectName: "modelPickerRemoteEntry"
                        required property var modelData
                        readonly property bool inUse: modelData.ref === picker.app.picker.currentRemoteRef
                        width: models.width
                        highlighted: inUse
                        text: modelData.label + (inUse ? qsTr("  (in use)") : "")
                        font.bold: inUse
                        Accessible.name: qsTr("Use %1 in this conversation").arg(modelData.label)
                        onClicked: {
                            list.close()
                            picker.app.picker.chooseRemote(modelData.ref)
                        }
                    }
                }
                MenuSeparator { width: parent.width }
                ItemDelegate {
                    objectName: "modelPickerLibrary"
                    width: parent.width
                    text: qsTr("Model library…")
                    Accessible.name: qsTr("Open the model library")
                    onClicked: {
                        list.close()
                        picker.libraryRequested()
                    }
                }
            }
        }
    }
}
