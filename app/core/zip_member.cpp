#include "zip_member.h"

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QFile>
#include <QFileInfo>

#include <zip.h>

#include <memory>

namespace arbor::app {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("ZipMember", text); }

QString libzipError(int code) {
    zip_error_t e;
    zip_error_init_with_code(&e, code);
    QString text = QString::fromUtf8(zip_error_strerror(&e));
    zip_error_fini(&e);
    return text;
}

struct ArchiveCloser {
    void operator()(zip_t* z) const { zip_discard(z); }  // read-only: nothing to write back
};
struct MemberCloser {
    void operator()(zip_file_t* f) const { zip_fclose(f); }
};

ZipMemberResult extract(const QString& archive, const QString& member, QFile& out, const std::atomic<bool>* stop) {
    const QString name = QFileInfo(archive).fileName();
    int code = 0;
    // ZIP_CHECKCONS: the central directory must agree with the local headers, so a cut-off
    // or spliced archive is refused when opened.
    std::unique_ptr<zip_t, ArchiveCloser> zip(zip_open(QFile::encodeName(archive).constData(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
    if (!zip) return {tr("%1 is not a readable zip archive: %2").arg(name, libzipError(code))};
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat(zip.get(), member.toUtf8().constData(), ZIP_FL_ENC_GUESS, &st) != 0)
        return {tr("%1 has no member %2.").arg(name, member)};
    std::unique_ptr<zip_file_t, MemberCloser> in(zip_fopen_index(zip.get(), st.index, 0));
    if (!in) return {tr("Cannot read %1 in %2: %3").arg(member, name, QString::fromUtf8(zip_strerror(zip.get())))};

    QCryptographicHash hash(QCryptographicHash::Sha256);
    QByteArray buffer(1 << 20, Qt::Uninitialized);
    qint64 total = 0;
    for (;;) {
        if (stop && stop->load()) return {tr("stopped")};
        const zip_int64_t n = zip_fread(in.get(), buffer.data(), zip_uint64_t(buffer.size()));
        if (n < 0)
            return {tr("%1 in %2 is damaged: %3").arg(member, name, QString::fromUtf8(zip_file_strerror(in.get())))};
        if (n == 0) break;
        if (out.write(buffer.constData(), n) != n)
            return {tr("Cannot write %1: %2").arg(out.fileName(), out.errorString())};
        hash.addData(QByteArrayView(buffer.constData(), n));
        total += n;
    }
    if ((st.valid & ZIP_STAT_SIZE) && zip_uint64_t(total) != st.size)
        return {tr("%1 in %2 is damaged: %3 bytes instead of %4.").arg(member, name).arg(total).arg(st.size)};
    if (!out.flush()) return {tr("Cannot write %1: %2").arg(out.fileName(), out.errorString())};
    return {{}, QString::fromLatin1(hash.result().toHex()), total};
}

} // namespace

ZipMemberResult extractZipMember(const QString& archive, const QString& member, const QString& target,
                                 const std::atomic<bool>* stop) {
    QFile out(target);
    if (!out.open(QIODevice::WriteOnly | QIODevice::NewOnly))
        return {tr("Cannot create %1: %2").arg(target, out.errorString())};
    out.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner);
    ZipMemberResult result = extract(archive, member, out, stop);
    out.close();
    if (!result.error.isEmpty()) QFile::remove(target);
    return result;
}

} // namespace arbor::app
