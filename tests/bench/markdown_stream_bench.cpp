// arbor-markdown-bench: the cost of one streamed token in a reply's markdown view as the
// reply grows to 20,000 words. The reply is tests/data/markdown/reply.md (headings,
// lists, a table, code fences) repeated; its tokens are its words with their leading
// space, longer ones cut into pieces of four characters, as a tokenizer would. At 1k,
// 5k, 10k and 20k words it streams one whole copy of the sample reply token by token and
// prints the mean and median time per token: through the block model alone
// (MarkdownBlockModel::append, as the app feeds a streaming reply), and through a real
// MarkdownView in an offscreen window, each token followed by a frame (polish, layout,
// render: QQuickWindow's grab). The text before each measured copy is given in one piece,
// not timed. --whole-text gives each token as the whole text so far instead
// (MarkdownBlockModel::setMarkdown, the markdown property).
#include "main_window.h"
#include "markdown_block_model.h"

#include <QFile>
#include <QGuiApplication>
#include <QQmlComponent>
#include <QQmlEngine>
#include <QQuickItem>
#include <QQuickWindow>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

namespace {

// The reply's tokens and, for each, how many words the reply holds up to its end.
struct Reply {
    QStringList tokens;
    std::vector<qsizetype> ends;   // where each token ends in the whole text
    std::vector<int> words;
    QString text;
};

QStringList tokensOf(const QString& text) {
    QStringList tokens;
    qsizetype from = 0;
    auto cut = [&](qsizetype to) {
        for (; to - from > 6; from += 4) tokens << text.mid(from, 4);
        if (to > from) tokens << text.mid(from, to - from);
        from = to;
    };
    for (qsizetype at = 1; at < text.size(); ++at)
        if (text[at] == QLatin1Char(' ') || text[at] == QLatin1Char('\n')) cut(at);
    cut(text.size());
    return tokens;
}

// Words begun in `text` when what precedes it ended in whitespace or not.
int wordsBegun(const QString& text, bool afterSpace) {
    int words = 0;
    for (const QChar c : text) {
        words += int(afterSpace && !c.isSpace());
        afterSpace = c.isSpace();
    }
    return words;
}

// Copies of `sample` until the reply holds `words` words.
Reply makeReply(const QString& sample, int words) {
    Reply reply;
    const QStringList copy = tokensOf(sample + QStringLiteral("\n\n"));
    int count = 0;
    while (count < words) {
        for (const QString& token : copy) {
            count += wordsBegun(token, reply.text.isEmpty() || reply.text.back().isSpace());
            reply.text += token;
            reply.tokens << token;
            reply.ends.push_back(reply.text.size());
            reply.words.push_back(count);
        }
    }
    return reply;
}

double mean(const std::vector<double>& us) {
    double sum = 0;
    for (double u : us) sum += u;
    return us.empty() ? 0 : sum / double(us.size());
}

double median(std::vector<double> us) {
    if (us.empty()) return 0;
    std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
    return us[us.size() / 2];
}

// Streams the tokens [first, last) of the reply into `step` after giving `start` the
// text before them; `step` gets the token and the whole text so far (a new string each
// token, as a QML property would get it) and records its own times.
void stream(const Reply& reply, size_t first, size_t last, const std::function<void(const QString&)>& start,
            const std::function<void(const QString& token, const QString& text)>& step) {
    start(reply.text.left(first ? reply.ends[first - 1] : 0));
    for (size_t t = first; t < last; ++t) step(reply.tokens[t], reply.text.left(reply.ends[t]));
}

double microsecondsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// A MarkdownView in an offscreen window, its end in sight as in a chat that follows a
// streaming reply.
class ViewWindow {
public:
    ViewWindow(QQmlEngine& engine, bool wholeText) : wholeText_(wholeText) {
        QQmlComponent component(&engine);
        component.setData(R"(
            import QtQuick
            import Arbor.Ui
            Item {
                property alias view: view
                MarkdownView { id: view; app: null; x: 20; width: parent.width - 40; y: parent.height - height }
            })",
                          QUrl::fromLocalFile(QStringLiteral("/MarkdownStreamBench.qml")));
        root_.reset(qobject_cast<QQuickItem*>(component.create()));
        if (!root_) qFatal("cannot create the view: %s", qPrintable(component.errorString()));
        view_ = root_->property("view").value<QQuickItem*>();
        blocks_ = view_->property("blocks").value<arbor::app::MarkdownBlockModel*>();
        window_.resize(800, 600);
        root_->setSize(QSizeF(800, 600));
        root_->setParentItem(window_.contentItem());
        window_.show();
    }
    void start(const QString& markdown) {
        view_->setProperty("markdown", markdown);
        window_.grabWindow();
    }
    // The token given (the model's update and what it runs), then a frame drawn.
    void show(const QString& token, const QString& text, std::vector<double>& updateUs, std::vector<double>& frameUs) {
        const auto t0 = std::chrono::steady_clock::now();
        if (wholeText_)
            view_->setProperty("markdown", text);
        else
            blocks_->append(token);
        updateUs.push_back(microsecondsSince(t0));
        const auto t1 = std::chrono::steady_clock::now();
        window_.grabWindow();
        frameUs.push_back(microsecondsSince(t1));
    }
    int items() const { return view_->property("itemCount").toInt(); }

private:
    bool wholeText_;
    QQuickWindow window_;
    std::unique_ptr<QQuickItem> root_;
    QQuickItem* view_ = nullptr;
    arbor::app::MarkdownBlockModel* blocks_ = nullptr;
};

} // namespace

int main(int argc, char** argv) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
    qputenv("QT_QUICK_BACKEND", "software");
    bool view = true, wholeText = false;
    std::vector<int> checkpoints{1000, 5000, 10000, 20000};
    QString samplePath = QStringLiteral(ARBOR_MARKDOWN_SAMPLE);
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--model-only") == 0) {
            view = false;
        } else if (std::strcmp(argv[i], "--whole-text") == 0) {
            wholeText = true;
        } else if (std::strcmp(argv[i], "--words") == 0 && i + 1 < argc) {
            checkpoints.clear();
            for (const QString& w : QString::fromLocal8Bit(argv[++i]).split(QLatin1Char(',')))
                checkpoints.push_back(std::max(1, w.toInt()));
            std::sort(checkpoints.begin(), checkpoints.end());
        } else if (std::strcmp(argv[i], "--sample") == 0 && i + 1 < argc) {
            samplePath = QString::fromLocal8Bit(argv[++i]);
        } else {
            std::fputs("usage: arbor-markdown-bench [--model-only] [--whole-text] [--words 1000,5000,10000,20000] [--sample REPLY.md]\n",
                       stderr);
            return 2;
        }
    }
    arbor::app::prepareGui();
    QGuiApplication app(argc, argv);
    QFile file(samplePath);
    if (!file.open(QIODevice::ReadOnly)) {
        std::fprintf(stderr, "arbor-markdown-bench: cannot read %s\n", qPrintable(samplePath));
        return 1;
    }
    const QString sample = QString::fromUtf8(file.readAll());
    const Reply reply = makeReply(sample, checkpoints.back());
    const qsizetype copyTokens = tokensOf(sample + QStringLiteral("\n\n")).size();
    std::printf("sample: %d words, %lld tokens; reply: %d words, %lld tokens, %lld characters\n", wordsBegun(sample, true),
                qlonglong(copyTokens), reply.words.back(), qlonglong(reply.tokens.size()), qlonglong(reply.text.size()));

    QQmlEngine engine;
    engine.addImportPath(QStringLiteral("qrc:/qt/qml"));
    std::printf("times per token, us: model = MarkdownBlockModel::%s; update = the same in a MarkdownView;\n"
                "frame = the window drawn after it (software renderer, 800x600); items = the view's block items\n",
                wholeText ? "setMarkdown (the whole text so far)" : "append (the token)");
    std::printf("%8s %7s %7s %9s %9s %9s %9s %6s\n", "words", "model", "(med)", "update", "(med)", "frame", "(med)",
                "items");
    for (const int words : checkpoints) {
        // The copy of the sample that reaches `words`.
        const size_t last = size_t(std::find_if(reply.words.begin(), reply.words.end(),
                                                [&](int w) { return w >= words; }) - reply.words.begin());
        const size_t first = last - last % size_t(copyTokens);
        const size_t end = std::min(first + size_t(copyTokens), size_t(reply.tokens.size()));
        arbor::app::MarkdownBlockModel model;
        std::vector<double> modelUs, updateUs, frameUs;
        stream(reply, first, end, [&](const QString& text) { model.setMarkdown(text); },
               [&](const QString& token, const QString& text) {
                   const auto t0 = std::chrono::steady_clock::now();
                   if (wholeText)
                       model.setMarkdown(text);
                   else
                       model.append(token);
                   modelUs.push_back(microsecondsSince(t0));
               });
        int items = 0;
        if (view) {
            ViewWindow window(engine, wholeText);
            stream(reply, first, end, [&](const QString& text) { window.start(text); },
                   [&](const QString& token, const QString& text) { window.show(token, text, updateUs, frameUs); });
            items = window.items();
        }
        std::printf("%8d %7.1f %7.1f", reply.words[end - 1], mean(modelUs), median(modelUs));
        if (view)
            std::printf(" %9.1f %9.1f %9.1f %9.1f %6d", mean(updateUs), median(updateUs), mean(frameUs), median(frameUs),
                        items);
        std::printf("\n");
        std::fflush(stdout);
    }
    return 0;
}
