import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// Downloads from Hugging Face: the curated catalogue, any repository's .gguf files, the
// optional token for gated repositories, and the downloads with their progress, each
// pausable, resumable and cancellable.
ColumnLayout {
    id: panel
    required property ModelDownloadList downloads
    readonly property bool dark: Material.theme === Material.Dark
    spacing: 10

    function secondsText(s) {
        if (s < 0) return ""
        if (s < 60) return qsTr("%1 s left").arg(s)
        if (s < 3600) return qsTr("%1 min left").arg(Math.round(s / 60))
        return qsTr("%1 h %2 min left").arg(Math.floor(s / 3600)).arg(Math.round((s % 3600) / 60))
    }
    function bytesText(b) {
        if (b >= 1e9) return (b / 1e9).toFixed(1) + " GB"
        if (b >= 1e6) return (b / 1e6).toFixed(b >= 1e7 ? 0 : 1) + " MB"
        return (b / 1e3).toFixed(0) + " KB"
    }

    Label {
        text: qsTr("Download models")
        font.pixelSize: Theme.titleSize
        font.bold: true
        Accessible.role: Accessible.Heading
    }
    SettingHint {
        objectName: "downloadProblem"
        text: panel.downloads.lastError
        visible: text.length > 0
        color: Theme.errorText(panel.dark)
    }

    // The downloads under way or just ended.
    Repeater {
        model: panel.downloads
        delegate: ColumnLayout {
            id: item
            required property ModelDownload download
            required property int index
            objectName: "downloadRow"
            Layout.fillWidth: true
            spacing: 2
            Label {
                Layout.fillWidth: true
                elide: Text.ElideMiddle
                text: item.download.repository + " / " + item.download.fileName
                font.bold: true
            }
            ProgressBar {
                Layout.fillWidth: true
                from: 0
                to: Math.max(1, item.download.totalBytes)
                value: item.download.receivedBytes
                visible: item.download.state !== ModelDownload.Finished && item.download.state !== ModelDownload.Cancelled
            }
            Label {
                objectName: "downloadStatus"
                Layout.fillWidth: true
                wrapMode: Text.Wrap
                color: item.download.state === ModelDownload.Failed ? Theme.errorText(panel.dark)
                                                                     : Theme.secondaryText(panel.dark)
                text: {
                    const d = item.download
                    const amount = qsTr("%1 of %2").arg(panel.bytesText(d.receivedBytes)).arg(panel.bytesText(d.totalBytes))
                    switch (d.state) {
                    case ModelDownload.Downloading:
                        return [amount, d.bytesPerSecond > 0 ? panel.bytesText(d.bytesPerSecond) + "/s" : "",
                                panel.secondsText(d.secondsLeft)].filter(s => s.length > 0).join(" · ")
                    case ModelDownload.Paused: return qsTr("Paused: %1").arg(amount)
                    case ModelDownload.Verifying: return qsTr("Checking the sha256…")
                    case ModelDownload.Finished: return qsTr("Downloaded: it is in the library above.")
                    case ModelDownload.Cancelled: return qsTr("Cancelled.")
                    default: return d.error
                    }
                }
            }
            RowLayout {
                Button {
                    text: item.download.state === ModelDownload.Downloading ? qsTr("Pause") : qsTr("Resume")
                    visible: item.download.state === ModelDownload.Downloading || item.download.state === ModelDownload.Paused
                             || item.download.state === ModelDownload.Failed
                    Accessible.name: text + " " + item.download.fileName
                    onClicked: item.download.state === ModelDownload.Downloading ? item.download.pause() : item.download.start()
                }
                Button {
                    flat: true
                    text: qsTr("Cancel")
                    visible: item.download.state !== ModelDownload.Finished && item.download.state !== ModelDownload.Cancelled
                    Accessible.name: qsTr("Cancel downloading %1").arg(item.download.fileName)
                    onClicked: item.download.cancel()
                }
                Button {
                    flat: true
                    text: qsTr("Dismiss")
                    visible: item.download.state === ModelDownload.Finished || item.download.state === ModelDownload.Cancelled
                    Accessible.name: qsTr("Dismiss %1").arg(item.download.fileName)
                    onClicked: panel.downloads.dismiss(item.index)
                }
            }
        }
    }

    Label { text: qsTr("Suggested models"); font.bold: true }
    Repeater {
        model: panel.downloads.catalogue
        delegate: RowLayout {
            id: entry
            required property var modelData
            Layout.fillWidth: true
            ColumnLayout {
                Layout.fillWidth: true
                spacing: 0
                Label {
                    Layout.fillWidth: true
                    wrapMode: Text.Wrap
                    text: qsTr("%1 · about %2 · %3").arg(entry.modelData.name).arg(panel.bytesText(entry.modelData.approxSize))
                          .arg(entry.modelData.licence)
                }
                SettingHint {
                    text: entry.modelData.description + " " + panel.downloads.fitForSize(entry.modelData.approxSize).text
                }
            }
            Button {
                objectName: "catalogueDownloadButton"
                text: qsTr("Download")
                Accessible.name: qsTr("Download %1").arg(entry.modelData.name)
                onClicked: panel.downloads.downloadFromHub(entry.modelData.repository, entry.modelData.file)
            }
        }
    }

    Label { text: qsTr("Any repository"); font.bold: true }
    RowLayout {
        Layout.fillWidth: true
        TextField {
            id: repository
            objectName: "repositoryField"
            Layout.fillWidth: true
            placeholderText: qsTr("owner/name, e.g. Qwen/Qwen3-0.6B-GGUF")
            selectByMouse: true
            Accessible.name: qsTr("Hugging Face repository")
            onAccepted: panel.downloads.hub.list(text)
        }
        Button {
            objectName: "listFilesButton"
            text: qsTr("List files")
            enabled: !panel.downloads.hub.busy
            onClicked: panel.downloads.hub.list(repository.text)
        }
    }
    SettingHint {
        text: panel.downloads.hub.error
        visible: text.length > 0
        color: Theme.errorText(panel.dark)
    }
    Repeater {
        model: panel.downloads.hub.files
        delegate: RowLayout {
            id: file
            required property var modelData
            Layout.fillWidth: true
            ColumnLayout {
                Layout.fillWidth: true
                spacing: 0
                Label { Layout.fillWidth: true; elide: Text.ElideMiddle; text: file.modelData.path + " · " + file.modelData.sizeText }
                SettingHint { text: panel.downloads.fitForSize(file.modelData.size).text }
            }
            Button {
                objectName: "fileDownloadButton"
                text: qsTr("Download")
                Accessible.name: qsTr("Download %1").arg(file.modelData.path)
                onClicked: panel.downloads.download(panel.downloads.hub.repository, file.modelData.path,
                                                    file.modelData.size, file.modelData.sha256)
            }
        }
    }

    Label { text: qsTr("Hugging Face token"); font.bold: true }
    RowLayout {
        Layout.fillWidth: true
        TextField {
            id: token
            Layout.fillWidth: true
            echoMode: TextInput.Password
            placeholderText: panel.downloads.hasToken ? qsTr("A token is stored") : qsTr("hf_…, for gated repositories")
            Accessible.name: qsTr("Hugging Face token")
        }
        Button {
            text: qsTr("Save token")
            onClicked: { panel.downloads.setToken(token.text); token.text = "" }
        }
    }
    SettingHint {
        text: panel.downloads.tokenError.length > 0 ? panel.downloads.tokenError
                                                   : qsTr("Kept in the desktop keyring (or a private file), never in the database. Save it empty to forget it.")
        color: panel.downloads.tokenError.length > 0 ? Theme.errorText(panel.dark) : Theme.secondaryText(panel.dark)
    }
}
