#include "hedger.h"

#include "clock.h"

#include <condition_variable>
#include <grpcpp/grpcpp.h>
#include <mutex>
#include <optional>

namespace rpcscope::lab {

Hedger::Outcome Hedger::call(const CallRequest &primary, const CallRequest &hedge)
{
    struct Leg
    {
        grpc::ClientContext context;
        CallRequest req;
        CallReply reply;
        std::optional<grpc::Status> status;
    };
    const std::string &id = primary.call_id();
    Leg legs[2];
    std::mutex mu;
    std::condition_variable cv;
    int winner = -1;
    auto send = [&](int i, Lab::Stub &stub, const CallRequest &req) {
        Leg &leg = legs[i];
        leg.req = req;
        leg.context.AddMetadata("rpcscope-call-id", id);
        leg.context.AddMetadata("rpcscope-hedge", std::to_string(i));
        leg.context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        stub.async()->Call(&leg.context, &leg.req, &leg.reply, [&, i](grpc::Status status) {
            std::lock_guard lk(mu);
            legs[i].status = status;
            if (winner < 0 && status.ok()) winner = i;
            cv.notify_all();
        });
    };
    Outcome out;
    out.result.callId = id;
    out.result.startNs = steadyNowNs();
    send(0, m_primary, primary);
    std::unique_lock lk(mu);
    if (!cv.wait_for(lk, m_delay, [&] { return legs[0].status.has_value(); })) {
        lk.unlock();
        m_listener("hedge-fired",
                   "application-level hedge: no reply after " + std::to_string(m_delay.count()) +
                       " ms, second request to replica B",
                   id);
        send(1, m_hedge, hedge);
        out.hedged = true;
        lk.lock();
    }
    const int legsSent = out.hedged ? 2 : 1;
    cv.wait(lk, [&] { return winner >= 0 || (legs[0].status && (legsSent == 1 || legs[1].status)); });
    out.result.endNs = steadyNowNs();
    const int decided = winner >= 0 ? winner : 0;
    if (legs[decided].status) {
        out.result.code = legs[decided].status->error_code();
        out.result.message = legs[decided].status->error_message();
    }
    for (int i = 0; i < legsSent; ++i) {
        if (i == decided || legs[i].status) continue;
        out.loser = i;
        lk.unlock();
        // The decision first, then the cancellation it causes on the wire.
        m_listener("hedge-cancelled",
                   std::string("replica ") + (i ? "B" : "A") + " lost to replica " + (decided ? "B" : "A") +
                       ": request cancelled",
                   id);
        legs[i].context.TryCancel();
        lk.lock();
    }
    // Every callback has run before the legs go out of scope.
    cv.wait(lk, [&] { return legs[0].status && (legsSent == 1 || legs[1].status); });
    if (out.loser >= 0) out.loserCode = legs[out.loser].status->error_code();
    return out;
}

} // namespace rpcscope::lab
