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

        // The trash button takes the conversation out of the list and closes its tab at
        // once, and deletes it only when the undo time runs out; Undo brings it back.
        const tabsBefore = testApp.tabs.count
        function trashButton() {
            for (const b of findAll(list, "deleteConversationButton"))
                if (b.visible && b.Accessible.name === "Delete Zebra crossing notes") return b
            return null
        }
        tryVerify(() => trashButton() !== null)
        trashButton().clicked()  // (the real window test clicks it)
        tryCompare(list, "count", before, 10000)
        compare(testApp.tabs.count, tabsBefore - 1)
        compare(testApp.tabs.indexOf(id), -1)
        compare(testApp.pendingDeletion, "Zebra crossing notes")
        testApp.undoDelete()
        compare(testApp.pendingDeletion, "")
        tryCompare(list, "count", before + 1, 10000)

        tryVerify(() => trashButton() !== null)
        trashButton().clicked()  // (the real window test clicks it)
        tryCompare(list, "count", before, 10000)
        tryCompare(testApp, "pendingDeletion", "", 15000)  // timed out: deleted for good
        testApp.conversations.reload()
        wait(500)
        compare(list.count, before)
        testApp.undoDelete()  // too late: nothing to undo
        wait(500)
        compare(list.count, before)
    }

    function findAll(item, name) {
        let out = item.objectName === name ? [item] : []
        for (let i = 0; i < item.children.length; ++i) out = out.concat(findAll(item.children[i], name))
        return out
    }

    function test_renameRefusesAnEmptyTitle() {
        const sidebar = createTemporaryObject(sidebarComponent, test)
        const rename = sidebar.renameDialog
        rename.ask(testApp.tabs.current ? testApp.tabs.current.conversationId : 0, "Keep")
        tryCompare(rename, "opened", true)
        compare(rename.standardButton(Dialog.Ok).enabled, true)
        rename.titleText = "   "
        compare(rename.standardButton(Dialog.Ok).enabled, false)
        verify(find(rename.contentItem, "renameProblem").visible)
        rename.titleText = "Fine"
        compare(rename.standardButton(Dialog.Ok).enabled, true)
        rename.reject()
    }

    function test_controlsHaveAccessibleNames() {
        const sidebar = createTemporaryObject(sidebarComponent, test)
        for (const name of ["newConversationButton", "settingsButton", "searchField"])
            verify(find(sidebar, name).Accessible.name.length > 0, name)
    }
}
