#include "protoimport.h"

#include <deque>
#include <filesystem>
#include <functional>
#include <google/protobuf/compiler/importer.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <set>

namespace rpcscope {

namespace pb = google::protobuf;

namespace {

// Well-known imports (google/protobuf/*.proto) come from the protobuf library itself when no import path
// has them, so a .proto that imports timestamp.proto loads with no set-up.
class FallbackSourceTree : public pb::compiler::SourceTree
{
public:
    explicit FallbackSourceTree(pb::compiler::DiskSourceTree *disk) : m_disk(disk) {}
    pb::io::ZeroCopyInputStream *Open(const std::string &filename) override
    {
        if (pb::io::ZeroCopyInputStream *s = m_disk->Open(filename)) return s;
        if (filename.rfind("google/protobuf/", 0) == 0)
            if (const pb::FileDescriptor *f =
                    pb::DescriptorPool::generated_pool()->FindFileByName(filename)) {
                m_texts.push_back(f->DebugString());
                return new pb::io::ArrayInputStream(m_texts.back().data(), int(m_texts.back().size()));
            }
        return nullptr;
    }
    std::string GetLastErrorMessage() override { return m_disk->GetLastErrorMessage(); }

private:
    pb::compiler::DiskSourceTree *m_disk;
    std::deque<std::string> m_texts; // the streams point into these
};

class ImportErrors : public pb::compiler::MultiFileErrorCollector
{
public:
    explicit ImportErrors(pb::compiler::DiskSourceTree *disk) : m_disk(disk) {}
    void AddError(const std::string &filename, int line, int column, const std::string &message) override
    {
        // The file as the user knows it: its path on disk, when it has one.
        std::string shown = filename, disk;
        if (m_disk->VirtualFileToDiskFile(filename, &disk)) shown = disk;
        if (line >= 0) shown += ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1);
        errors.push_back(shown + ": " + message);
    }
    std::vector<std::string> errors;

private:
    pb::compiler::DiskSourceTree *m_disk;
};

std::string absolutePath(const std::string &path)
{
    std::error_code ec;
    const std::filesystem::path p = std::filesystem::absolute(path, ec);
    return ec ? path : p.lexically_normal().string();
}

} // namespace

std::optional<std::vector<pb::FileDescriptorProto>>
importProtoFiles(const std::vector<std::string> &files, const std::vector<std::string> &importPaths,
                 std::vector<std::string> *errors)
{
    pb::compiler::DiskSourceTree disk;
    for (const std::string &dir : importPaths) {
        if (!std::filesystem::is_directory(dir)) {
            errors->push_back(dir + ": import path is not a directory");
            continue;
        }
        disk.MapPath("", absolutePath(dir));
    }
    std::vector<std::string> virtualNames;
    for (const std::string &file : files) {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(file, ec)) {
            // Not a file here: a name relative to the import paths, as protoc takes it.
            virtualNames.push_back(file);
            continue;
        }
        const std::string full = absolutePath(file);
        std::string virtualName, shadow;
        auto r = disk.DiskFileToVirtualFile(full, &virtualName, &shadow);
        if (r == pb::compiler::DiskSourceTree::NO_MAPPING) {
            // Outside every import path: its own directory is searched too (after the import paths).
            disk.MapPath("", std::filesystem::path(full).parent_path().string());
            r = disk.DiskFileToVirtualFile(full, &virtualName, &shadow);
        }
        switch (r) {
        case pb::compiler::DiskSourceTree::SUCCESS:
            virtualNames.push_back(virtualName);
            break;
        case pb::compiler::DiskSourceTree::SHADOWED:
            errors->push_back(file + ": shadowed by " + shadow +
                              " (an earlier import path has a file named " + virtualName + ")");
            break;
        case pb::compiler::DiskSourceTree::CANNOT_OPEN:
            errors->push_back(file + ": cannot read it");
            break;
        case pb::compiler::DiskSourceTree::NO_MAPPING:
            errors->push_back(file + ": not inside any import path");
            break;
        }
    }
    FallbackSourceTree tree(&disk);
    ImportErrors importErrors(&disk);
    pb::compiler::Importer importer(&tree, &importErrors);
    std::vector<const pb::FileDescriptor *> imported;
    for (const std::string &name : virtualNames) {
        const std::size_t before = importErrors.errors.size();
        if (const pb::FileDescriptor *f = importer.Import(name))
            imported.push_back(f);
        else if (importErrors.errors.size() == before)
            importErrors.errors.push_back(name + ": cannot load it");
    }
    errors->insert(errors->end(), importErrors.errors.begin(), importErrors.errors.end());
    if (imported.empty()) return std::nullopt;
    // The files and everything they import, copied out of the importer's pool into ours.
    std::vector<pb::FileDescriptorProto> out;
    std::set<std::string> seen;
    std::function<void(const pb::FileDescriptor *)> take = [&](const pb::FileDescriptor *f) {
        if (!seen.insert(f->name()).second) return;
        for (int i = 0; i < f->dependency_count(); ++i)
            take(f->dependency(i));
        if (f->name().rfind("google/protobuf/", 0) == 0 &&
            pb::DescriptorPool::generated_pool()->FindFileByName(f->name()))
            return; // taken from the library when the pool is built
        pb::FileDescriptorProto proto;
        f->CopyTo(&proto);
        f->CopyJsonNameTo(&proto);
        out.push_back(std::move(proto));
    };
    for (const pb::FileDescriptor *f : imported)
        take(f);
    return out;
}

} // namespace rpcscope
