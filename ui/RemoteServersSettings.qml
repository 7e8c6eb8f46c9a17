import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// The remote OpenAI-compatible servers (vLLM, SGLang, llama-server, Ollama, another
// Arbor): add one by its base URL and optional API key, see the models it lists (or why
// it lists none), list them again, remove it. A conversation uses one of its models when
// it is chosen in the header's model picker.
ColumnLayout {
    id: section
    required property RemoteEndpoints remotes
    readonly property bool dark: Material.theme === Material.Dark
    spacing: 8

    RowLayout {
        Layout.fillWidth: true
        TextField {
            id: url
            objectName: "remoteUrlField"
            Layout.fillWidth: true
            placeholderText: qsTr("Base URL, e.g. http://gpu-box:8000/v1")
            selectByMouse: true
            Accessible.name: qsTr("Remote server base URL")
            onAccepted: add.clicked()
        }
        TextField {
            id: key
            objectName: "remoteKeyField"
            Layout.preferredWidth: 180
            placeholderText: qsTr("API key (optional)")
            echoMode: TextInput.Password
            selectByMouse: true
            Accessible.name: qsTr("Remote server API key")
            onAccepted: add.clicked()
        }
        Button {
            id: add
            objectName: "remoteAddButton"
            text: qsTr("Add")
            Accessible.name: qsTr("Add the remote server")
            onClicked: {
                problem.text = section.remotes.add(url.text, key.text)
                if (problem.text.length === 0) {
                    url.text = ""
                    key.text = ""
                }
            }
        }
    }
    SettingHint {
        id: problem
        objectName: "remoteProblem"
        visible: text.length > 0
        color: Theme.errorText(section.dark)
    }
    SettingHint {
        visible: section.remotes.endpoints.length === 0
        text: qsTr("No remote servers. A key is kept in the desktop keyring (or a private file), never in the database.")
    }

    Repeater {
        model: section.remotes.endpoints
        delegate: ColumnLayout {
            id: endpoint
            objectName: "remoteEndpoint"
            required property var modelData
            Layout.fillWidth: true
            spacing: 2
            RowLayout {
                Layout.fillWidth: true
                Label {
                    Layout.fillWidth: true
                    elide: Text.ElideMiddle
                    font.bold: true
                    text: endpoint.modelData.url + (endpoint.modelData.hasKey ? qsTr("  (with key)") : "")
                }
                BusyIndicator {
                    visible: endpoint.modelData.listing
                    running: visible
                    Layout.preferredWidth: Theme.iconSize
                    Layout.preferredHeight: Theme.iconSize
                    padding: 0
                }
                Button {
                    flat: true
                    text: qsTr("List again")
                    Accessible.name: qsTr("List the models of %1 again").arg(endpoint.modelData.url)
                    onClicked: section.remotes.refresh(endpoint.modelData.url)
                }
                Button {
                    flat: true
                    text: qsTr("Remove")
                    Accessible.name: qsTr("Remove the remote server %1").arg(endpoint.modelData.url)
                    onClicked: section.remotes.remove(endpoint.modelData.url)
                }
            }
            SettingHint {
                objectName: "remoteEndpointModels"
                color: endpoint.modelData.error.length > 0 ? Theme.errorText(section.dark) : Theme.secondaryText(section.dark)
                text: endpoint.modelData.error.length > 0 ? endpoint.modelData.error
                      : endpoint.modelData.listing ? qsTr("Listing its models…")
                      : endpoint.modelData.models.map(m => m.id).join(", ")
            }
        }
    }
}
