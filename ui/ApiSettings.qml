// Settings of the local OpenAI-compatible API: a view of an ApiController (Arbor.Core).
import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts

ColumnLayout {
    id: root

    required property var api

    spacing: 8

    Switch {
        text: qsTr("Local API server")
        checked: root.api.enabled
        onToggled: root.api.enabled = checked
        Accessible.name: text
    }

    GridLayout {
        columns: 2
        columnSpacing: 12
        rowSpacing: 6
        Layout.fillWidth: true

        Label {
            text: qsTr("Address")
        }
        TextField {
            id: hostField
            text: root.api.host
            placeholderText: "127.0.0.1"
            inputMethodHints: Qt.ImhNoPredictiveText | Qt.ImhNoAutoUppercase
            Layout.fillWidth: true
            Accessible.name: qsTr("Address to listen on")
            onEditingFinished: root.api.host = text
        }

        Item {
            visible: exposedWarning.visible
            implicitWidth: 1
        }
        Label {
            id: exposedWarning
            visible: root.api.exposed
            text: qsTr("Other machines on the network can reach the server. Use 127.0.0.1 to keep it on this computer.")
            color: Theme.errorText(Material.theme === Material.Dark)
            wrapMode: Text.WordWrap
            Layout.fillWidth: true
            Accessible.role: Accessible.AlertMessage
            Accessible.name: text
        }

        Label {
            text: qsTr("Port")
        }
        SpinBox {
            from: 1
            to: 65535
            editable: true
            value: root.api.port
            // Plain digits: no thousands separator in a port number.
            textFromValue: function (value, locale) {
                return value.toString()
            }
            valueFromText: function (text, locale) {
                return parseInt(text)
            }
            onValueModified: root.api.port = value
            Accessible.name: qsTr("Port to listen on")
        }

        Label {
            text: qsTr("API key")
        }
        TextField {
            text: root.api.apiKey
            placeholderText: qsTr("none")
            echoMode: TextInput.Password
            Layout.fillWidth: true
            Accessible.name: qsTr("API key (clients send it as Authorization: Bearer)")
            onEditingFinished: root.api.apiKey = text
        }

        Label {
            text: qsTr("Allowed origins")
        }
        TextField {
            text: root.api.corsOrigins
            placeholderText: qsTr("none (comma-separated, * for any)")
            inputMethodHints: Qt.ImhNoPredictiveText | Qt.ImhNoAutoUppercase
            Layout.fillWidth: true
            Accessible.name: qsTr("Allowed CORS origins, comma-separated")
            onEditingFinished: root.api.corsOrigins = text
        }

        Label {
            text: qsTr("Allowed host names")
        }
        TextField {
            text: root.api.allowedHosts
            placeholderText: qsTr("localhost only (comma-separated, no ports)")
            inputMethodHints: Qt.ImhNoPredictiveText | Qt.ImhNoAutoUppercase
            Layout.fillWidth: true
            Accessible.name: qsTr("Host names answered besides localhost, comma-separated")
            onEditingFinished: root.api.allowedHosts = text
        }
    }

    CheckBox {
        text: qsTr("Share the cache between API clients")
        checked: root.api.shareCache
        onToggled: root.api.shareCache = checked
        Accessible.name: text
    }
    Label {
        visible: root.api.shareCache
        text: qsTr("Clients can then learn from response times and cached-token counts what other clients and your conversations sent.")
        color: Theme.errorText(Material.theme === Material.Dark)
        wrapMode: Text.WordWrap
        Layout.fillWidth: true
        Accessible.role: Accessible.AlertMessage
        Accessible.name: text
    }

    Label {
        id: statusLabel
        text: root.api.listening ? qsTr("Listening at")
                                 : root.api.error.length > 0 ? qsTr("Not listening: %1").arg(root.api.error)
                                                             : qsTr("Not listening")
        wrapMode: Text.WordWrap
        Layout.fillWidth: true
        Accessible.name: text
    }
    TextField {
        visible: root.api.listening
        text: root.api.url
        readOnly: true
        selectByMouse: true
        Layout.fillWidth: true
        Accessible.name: qsTr("Server URL")
    }
}
