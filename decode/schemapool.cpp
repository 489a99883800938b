#include "schemapool.h"

#include <algorithm>
#include <functional>
#include <set>

namespace rpcscope {

namespace pb = google::protobuf;

namespace {

class BuildErrors : public pb::DescriptorPool::ErrorCollector
{
public:
    void AddError(const std::string &filename, const std::string &element, const pb::Message *, ErrorLocation,
                  const std::string &message) override
    {
        errors.push_back(filename + ": " + (element.empty() ? std::string() : element + ": ") + message);
    }
    std::vector<std::string> errors;
};

} // namespace

SchemaPool::SchemaPool() = default;
SchemaPool::~SchemaPool() = default;

void SchemaPool::add(std::vector<pb::FileDescriptorProto> files, std::vector<std::string> *errors)
{
    for (pb::FileDescriptorProto &proto : files)
        put(std::move(proto));
    rebuild(errors);
}

bool SchemaPool::addSerialized(const std::vector<std::string> &serialized, std::vector<std::string> *errors)
{
    std::vector<pb::FileDescriptorProto> parsed;
    for (std::size_t i = 0; i < serialized.size(); ++i) {
        pb::FileDescriptorProto proto;
        if (!proto.ParseFromString(serialized[i]) || proto.name().empty()) {
            errors->push_back("file descriptor " + std::to_string(i + 1) + " of " +
                              std::to_string(serialized.size()) + " does not parse");
            continue;
        }
        parsed.push_back(std::move(proto));
    }
    if (parsed.empty()) return false;
    add(std::move(parsed), errors);
    return true;
}

void SchemaPool::clear()
{
    m_factory.reset();
    m_pool.reset();
    m_files.clear();
    m_order.clear();
}

std::vector<std::string> SchemaPool::serviceNames() const
{
    std::vector<std::string> out;
    if (!m_pool) return out;
    for (const std::string &name : m_order)
        if (const pb::FileDescriptor *f = m_pool->FindFileByName(name))
            for (int i = 0; i < f->service_count(); ++i)
                out.push_back(f->service(i)->full_name());
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::optional<std::pair<std::string, std::string>> SchemaPool::methodTypes(std::string_view path) const
{
    if (!m_pool) return std::nullopt;
    if (!path.empty() && path.front() == '/') path.remove_prefix(1);
    const std::size_t slash = path.rfind('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == path.size()) return std::nullopt;
    const pb::ServiceDescriptor *service = m_pool->FindServiceByName(std::string(path.substr(0, slash)));
    const pb::MethodDescriptor *method =
        service ? service->FindMethodByName(std::string(path.substr(slash + 1))) : nullptr;
    if (!method) return std::nullopt;
    return std::pair{method->input_type()->full_name(), method->output_type()->full_name()};
}

const pb::Descriptor *SchemaPool::findMessageType(const std::string &fullName) const
{
    return m_pool ? m_pool->FindMessageTypeByName(fullName) : nullptr;
}

std::unique_ptr<pb::Message> SchemaPool::newMessage(const pb::Descriptor *type) const
{
    return std::unique_ptr<pb::Message>(m_factory->GetPrototype(type)->New());
}

void SchemaPool::put(pb::FileDescriptorProto proto)
{
    const std::string name = proto.name();
    if (!m_files.count(name)) m_order.push_back(name);
    m_files[name] = std::move(proto);
}

// Builds a fresh pool, dependencies first. Files that fail are dropped, with their errors.
void SchemaPool::rebuild(std::vector<std::string> *errors)
{
    auto next = std::make_unique<pb::DescriptorPool>();
    std::set<std::string> built, failed, building;
    std::function<bool(const std::string &, const std::string &)> build = [&](const std::string &name,
                                                                              const std::string &by) {
        if (built.count(name)) return true;
        if (failed.count(name)) return false;
        if (building.count(name)) {
            errors->push_back(name + ": imports itself (an import cycle)");
            return false;
        }
        pb::FileDescriptorProto proto;
        if (auto it = m_files.find(name); it != m_files.end()) {
            proto = it->second;
        } else if (const pb::FileDescriptor *f = pb::DescriptorPool::generated_pool()->FindFileByName(name);
                   f && name.rfind("google/protobuf/", 0) == 0) {
            f->CopyTo(&proto);
            f->CopyJsonNameTo(&proto);
        } else {
            errors->push_back(by + ": imports " + name + ", which is not loaded");
            failed.insert(name);
            return false;
        }
        building.insert(name);
        bool depsOk = true;
        for (const std::string &dep : proto.dependency())
            depsOk = build(dep, name) && depsOk;
        building.erase(name);
        if (!depsOk) {
            failed.insert(name);
            return false;
        }
        BuildErrors collector;
        if (!next->BuildFileCollectingErrors(proto, &collector)) {
            errors->insert(errors->end(), collector.errors.begin(), collector.errors.end());
            failed.insert(name);
            return false;
        }
        built.insert(name);
        return true;
    };
    for (const std::string &name : m_order)
        build(name, name);
    for (const std::string &name : failed)
        m_files.erase(name);
    std::erase_if(m_order, [&](const std::string &n) { return !m_files.count(n); });
    m_factory.reset(); // before the pool its prototypes point into
    m_pool = std::move(next);
    m_factory = std::make_unique<pb::DynamicMessageFactory>(m_pool.get());
}

} // namespace rpcscope
