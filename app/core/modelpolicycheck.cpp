#include "modelpolicycheck.h"

#include "headerlog.h"
#include "timelinemodel.h"
#include "useragentindex.h"

#include <set>

namespace rpcscope {

PolicyCheck policyCheckOf(const TimelineModel &model, const RetryServiceConfig &config,
                          GapEnvelopes *envelopes)
{
    const TimelineStore &store = model.store();
    UserAgentIndex agents;
    if (const HeaderLog *log = model.headerLog()) {
        std::set<std::uint32_t> seen;
        for (const Call &call : store.calls()) {
            if (call.attempts.empty()) continue;
            const Attempt &a = call.attempts.front();
            if (!seen.insert(a.connection).second) continue;
            if (const auto *blocks = log->blocks(a.connection, a.stream)) {
                EventBatch batch;
                for (const HeaderLog::Block &b : *blocks) {
                    WireEvent e;
                    e.kind = EventKind::Headers;
                    e.connection = a.connection;
                    e.dir = b.dir;
                    e.headers = b.headers;
                    batch.push_back(std::move(e));
                }
                agents.record(batch);
            } else {
                seen.erase(a.connection); // forgotten by the log: another call on it may still be there
            }
        }
    }
    return PolicyCheck::run(store, config, agents, envelopes);
}

} // namespace rpcscope
