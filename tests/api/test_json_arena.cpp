// A parsed document's arrays and objects live in one arena: parsing makes a handful of
// heap allocations whatever the number of containers; parts of a document stay valid on
// their own, and copies and later growth use the heap.
#include "test_support.h"

#include "api/json.h"
#include "api/json_arena.h"

#include <cstdlib>
#include <new>
#include <string>

using arbor::api::Json;
using arbor::api::JsonAllocator;
using arbor::api::JsonArena;

namespace {

// Heap allocations made by this thread while `counting` is set (the global operators new
// and delete are replaced for this test program; everything else it does is unchanged).
thread_local bool counting = false;
thread_local size_t allocations = 0;

void* counted_malloc(size_t size) noexcept {
    if (counting) ++allocations;
    return std::malloc(size ? size : 1);
}

size_t allocations_during(const auto& work) {
    allocations = 0;
    counting = true;
    work();
    counting = false;
    return allocations;
}

// `levels` arrays and objects nested in each other, ending in the number `leaf`.
std::string nest(int levels, int leaf) {
    std::string open, close;
    for (int d = 0; d < levels; ++d) {
        open += d % 2 ? "{\"a\":" : "[";
        close.insert(0, d % 2 ? "}" : "]");
    }
    return open + std::to_string(leaf) + close;
}

// The number at the bottom of a nest().
int64_t leaf_of(const Json& nested) {
    const Json* v = &nested;
    while (!v->is_number()) v = v->is_array() ? &v->as_array()[0] : v->find("a");
    return *v->as_integer();
}

} // namespace

// Every form of new and delete that can meet another is replaced, the nothrow and array
// ones too. The standard library's own nothrow and array forms call the replaced
// operator new, but a sanitizer runtime defines each form itself: with only
// operator new(size_t) replaced, ASan's operator new(nothrow), which simdjson's parser
// uses, reached the free() below and ASan rightly reported new against free. (The aligned
// forms are left alone: they pair only with each other.)
void* operator new(size_t size) {
    if (void* p = counted_malloc(size)) return p;
    throw std::bad_alloc();
}
void* operator new[](size_t size) {
    if (void* p = counted_malloc(size)) return p;
    throw std::bad_alloc();
}
void* operator new(size_t size, const std::nothrow_t&) noexcept { return counted_malloc(size); }
void* operator new[](size_t size, const std::nothrow_t&) noexcept { return counted_malloc(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

class TestJsonArena : public QObject {
    Q_OBJECT

private slots:
    // 2,000 nests of 40 levels: 80,000 containers. Their storage comes from 1 MiB blocks,
    // so the count stays far below one allocation per container (it was 80,000 before
    // the arena); a warm-up parse first fills the parser's and the arena's spares.
    void parsingAllocatesPerBlockNotPerContainer() {
        std::string text = "[";
        for (int i = 0; i < 2000; ++i) text += (i ? "," : "") + nest(40, i);
        text += "]";
        (void)Json::parse(text);
        size_t made = 0;
        const size_t during = allocations_during([&] {
            const Json v = Json::parse(text);
            made = v.as_array().size();
        });
        QCOMPARE(made, size_t(2000));
        QVERIFY2(during < 50, qPrintable(QString("%1 allocations for 80,000 containers").arg(during)));
    }

    // A part moved out of a document, or the tree of a document that is gone, keeps the
    // arena alive (under ASan, a use after free would be reported here).
    void partsOutliveTheirDocument() {
        Json kept;
        {
            Json doc = Json::parse("{\"keep\":" + nest(30, 7) + ",\"drop\":[1,2,3]}");
            kept = std::move(*const_cast<Json*>(doc.find("keep")));
        }
        QCOMPARE(leaf_of(kept), int64_t(7));
        Json moved = std::move(kept);
        kept = Json();
        QCOMPARE(leaf_of(moved), int64_t(7));
    }

    // A copy is built on the heap and owes nothing to the arena; growing a parsed
    // container after the parse moves it to the heap too (the arena is sealed), which is
    // what lets two parts of one document change on two threads at once.
    void copiesAndGrowthUseTheHeap() {
        Json copy;
        {
            const Json doc = Json::parse("{\"list\":[1,2]}");
            copy = *doc.find("list");
            QVERIFY(copy.as_array().get_allocator().arena() == nullptr);
            QVERIFY(doc.find("list")->as_array().get_allocator().arena() != nullptr);
        }
        QCOMPARE(copy.dump(), std::string("[1,2]"));
        Json doc = Json::parse("[[1]]");
        Json::Array& inner = doc.as_array()[0].as_array();
        JsonArena* arena = inner.get_allocator().arena();
        QVERIFY(arena != nullptr);
        for (int i = 2; i <= 1000; ++i) inner.push_back(Json(i));
        QVERIFY(!arena->owns(inner.data()));
        QCOMPARE(inner.size(), size_t(1000));
        QCOMPARE(*inner.back().as_integer(), int64_t(1000));
    }

    // The arena itself: aligned bump allocation, a request larger than a block gets one of
    // its own, owns() tells its memory from the heap's, and sealing ends allocation.
    void arenaAllocatesUntilSealed() {
        auto allocator = JsonAllocator<Json>::with_new_arena();
        JsonArena& arena = *allocator.arena();
        void* a = arena.allocate(3, 1);
        void* b = arena.allocate(40, 8);
        QVERIFY(a && b);
        QCOMPARE(reinterpret_cast<uintptr_t>(b) % 8, uintptr_t(0));
        QVERIFY(static_cast<char*>(b) >= static_cast<char*>(a) + 3);
        void* big = arena.allocate(3u << 20, 16);
        QVERIFY(big != nullptr);
        QVERIFY(arena.reserved_bytes() >= (4u << 20));
        static_cast<char*>(big)[(3u << 20) - 1] = 1;  // the whole request is usable
        QVERIFY(arena.owns(a) && arena.owns(b) && arena.owns(big));
        QVERIFY(arena.owns(static_cast<char*>(big) + (3u << 20) - 1));
        int on_heap = 0;
        QVERIFY(!arena.owns(&on_heap));
        arena.seal();
        QVERIFY(arena.allocate(8, 8) == nullptr);
        Json* from_heap = allocator.allocate(2);
        QVERIFY(!arena.owns(from_heap));
        allocator.deallocate(from_heap, 2);
    }
};

QTEST_APPLESS_MAIN(TestJsonArena)
#include "test_json_arena.moc"
