import QtQuick
import QtQuick.Controls
import QtTest
import Arbor.Ui

TestCase {
    id: test
    name: "Sidebar"
    when: windowShown
    visible: true  // TestCase hides itself by default; hidden items get no clicks
    width: 400
    height: 600

    Component {
        id: sidebarComponent
        Sidebar { width: 300; height: 550; app: testApp }
    }

    function find(item, name) {
        if (item.objectName === name) return item
        for (let i = 0; i < item.children.length; ++i) {
            const f = find(item.children[i], name)
            if (f) return f
        }
        return null
    }

    function initTestCase() {
        tryVerify(() => testApp.started, 30000)
    }

    function test_newRenameSearchDelete() {
        const sidebar = createTemporaryObject(sidebarComponent, test)
        const list = find(sidebar, "conversationList")
        const before = list.count
        mouseClick(find(sidebar, "newConversationButton"))
        tryCompare(list, "count", before + 1, 10000)
        const id = testApp.tabs.current.conversationId

        // Rename through the dialog, then search for the new title.
        const rename = sidebar.renameDialog
        rename.ask(id, "")
        tryCompare(rename, "opened", true)
        rename.titleText = "Zebra crossing notes"
        rename.accept()
        tryVerify(() => testApp.tabs.current.title === "Zebra crossing notes")
        const search = find(sidebar, "searchField")
        search.text = "zebra"
        tryCompare(list, "count", 1, 10000)
        search.text = "nothing-matches-this"
        tryCompare(list, "count", 0, 10000)
        search.text = ""
        tryCompare(list, "count", before + 1, 10000)

        // Delete asks first; yes closes the tab and removes the conversation.
        const tabsBefore = testApp.tabs.count
        const dialog = sidebar.deleteDialog
        dialog.ask(id, "Zebra crossing notes")
        tryCompare(dialog, "opened", true)
        compare(list.count, before + 1)  // nothing deleted while asking
        dialog.accept()
        tryCompare(list, "count", before, 10000)
        compare(testApp.tabs.count, tabsBefore - 1)
        compare(testApp.tabs.indexOf(id), -1)
    }

    function test_controlsHaveAccessibleNames() {
        const sidebar = createTemporaryObject(sidebarComponent, test)
        for (const name of ["newConversationButton", "settingsButton", "searchField"])
            verify(find(sidebar, name).Accessible.name.length > 0, name)
    }
}
