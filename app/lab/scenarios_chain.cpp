// Seed 001 scenarios (chain). Registered by allScenarios() (scenariocatalog.cpp); their texts and parameters
// are in resources/scenarios/chain.json.
//
// Four ChainServers play hops A, B, C and D; every hop is reached through a capture relay of its own
// (ScenarioContext::openHop), so the timeline shows client->A, A->B, B->C and C->D as nested calls. The
// self-checks use the hops' own records (the deadline left on arrival, what they passed on, what they
// answered), never the model: scenarios do not see it.

#include "chainserver.h"
#include "events.h"
#include "scenario.h"
#include "scenariokit.h"
#include "verdict.h"

#include <array>
#include <cstdlib>
#include <grpcpp/support/status_code_enum.h>
#include <sstream>

namespace rpcscope::lab {

namespace {

// A hop whose call to the next one dies with its own deadline: the propagated deadline fires
// (DEADLINE_EXCEEDED) or the parent call's expiry cancels it first (CANCELLED), whichever timer runs first.
constexpr int kGaveUp = -1;
constexpr const char *kHopNames[] = {"A", "B", "C", "D"};
// Sleeps, scheduling and the relays add a few ms per hop. A prediction closer than this to a threshold is
// not worth a firm expectation: the scenario then checks only what holds either way.
constexpr std::int64_t kMarginMs = 25;
// How long a hop may take to answer (it waits for the hops below it), and how long a call its caller has
// finished may take to show up at the hop (it never does when the caller's deadline ran out before sending).
constexpr auto kAnswerWait = std::chrono::seconds(10);
constexpr auto kArrivalWait = std::chrono::seconds(1);

std::int64_t toMs(std::int64_t ns)
{
    return ns / 1'000'000;
}

// The four hops, started D first so each knows the relay in front of the next.
struct ChainLab
{
    std::array<std::unique_ptr<ChainServer>, 4> hops;
    std::string entry; // the client->A relay
    std::string error;

    ~ChainLab()
    {
        // Downstream first: a hop still waiting on the next one then gets its answer (an error) at once.
        for (auto it = hops.rbegin(); it != hops.rend(); ++it)
            if (*it) (*it)->stop();
    }

    bool start(const ScenarioContext &ctx, std::array<HopConfig, 4> configs)
    {
        if (!ctx.openHop) {
            error = "this scenario needs capture hops (ScenarioContext::openHop)";
            return false;
        }
        std::string next;
        for (int i = 3; i >= 0; --i) {
            HopConfig &c = configs[size_t(i)];
            c.name = kHopNames[i];
            c.nextName = i < 3 ? kHopNames[i + 1] : "";
            c.next = next;
            auto hop = std::make_unique<ChainServer>(c);
            if (!hop->start(&error)) return false;
            const std::string label =
                i == 0 ? std::string("client->A") : std::string(kHopNames[i - 1]) + "->" + kHopNames[i];
            next = ctx.openHop(label, hop->address(), &error);
            if (next.empty()) return false;
            hops[size_t(i)] = std::move(hop);
        }
        entry = next;
        return true;
    }
};

// One chain call and what each hop recorded for it (nullopt: the call never reached that hop).
struct ChainRun
{
    CallResult client;
    std::array<std::optional<HopRecord>, 4> hop;
    std::array<std::string, 4> callIds; // the id each hop's incoming call carries
    std::array<int, 4> arrivals{};      // how often it arrived there

    // "A 999 > B 897 > C 795 > D 693 ms" (or "none" for a hop that got no deadline).
    std::string budgets() const
    {
        std::ostringstream s;
        for (size_t i = 0; i < 4 && hop[i]; ++i) {
            s << (i ? (hop[i]->budgetNs && hop[i - 1]->budgetNs && *hop[i]->budgetNs > *hop[i - 1]->budgetNs
                           ? " < "
                           : " > ")
                    : "")
              << kHopNames[i] << " ";
            if (hop[i]->budgetNs)
                s << toMs(*hop[i]->budgetNs);
            else
                s << "none";
        }
        return s.str() + " ms";
    }
    int reached() const
    {
        int n = 0;
        while (n < 4 && hop[size_t(n)])
            ++n;
        return n;
    }
    std::int64_t elapsedMs() const { return toMs(client.endNs - client.startNs); }
};

// Makes the chain's first call and waits, hop by hop, until every hop that was called has answered, so the
// scenario ends with the whole chain on the timeline (downstream hops may answer after the client gave up).
ChainRun runChain(const ScenarioContext &ctx, const ChainLab &lab, std::int64_t budgetMs)
{
    ChainRun run;
    const std::string id = ctx.nextCallId();
    for (size_t i = 0; i < 4; ++i)
        run.callIds[i] = i == 0 ? id : id + ">" + kHopNames[i];
    run.client = callChain(lab.entry, id, std::chrono::milliseconds(budgetMs));
    for (size_t i = 0; i < 4; ++i) {
        if (i > 0 && !(run.hop[i - 1] && run.hop[i - 1]->calledNext)) break;
        // The caller is done with its call (the client returned, or the hop above answered), so the call has
        // arrived by now or soon, or never will.
        if (lab.hops[i]->waitFor(run.callIds[i], false, kArrivalWait))
            lab.hops[i]->waitFor(run.callIds[i], true, kAnswerWait);
        run.hop[i] = lab.hops[i]->recordFor(run.callIds[i]);
        for (const HopRecord &r : lab.hops[i]->records())
            run.arrivals[i] += r.callId == run.callIds[i];
        if (!run.hop[i]) break;
    }
    return run;
}

// Every hop that was reached saw its call once, so the wire has one attempt per hop, ending with `wire`;
// each hop answered `answered` (they differ when a hop answers a call its caller has already given up on).
void expectCalls(const ChainRun &run, Verdict &check, const std::array<int, 4> &wire,
                 const std::array<int, 4> &answered)
{
    for (size_t i = 0; i < size_t(run.reached()); ++i) {
        check.addExpected({run.callIds[i], 1, wire[i]});
        check.expect(run.arrivals[i] == 1, run.callIds[i] + " to arrive once at " + kHopNames[i] +
                                               ", it arrived " + std::to_string(run.arrivals[i]) + " times");
        const int code = run.hop[i]->code;
        const bool held = answered[i] == kGaveUp
                              ? code == kDeadlineExceeded || code == grpc::StatusCode::CANCELLED
                              : code == answered[i];
        check.expect(held, std::string(kHopNames[i]) + " to answer " +
                               (answered[i] == kGaveUp ? std::string("DEADLINE_EXCEEDED or CANCELLED")
                                                       : grpcStatusName(answered[i])) +
                               ", it answered " + grpcStatusName(code) + " (" + run.hop[i]->message + ")");
    }
}

ScenarioResult runDeadlineChain(const ScenarioContext &ctx, const ScenarioParams &p)
{
    const int work = p.integer("work_ms");
    const int minBudget = p.integer("min_budget_ms");
    std::array<HopConfig, 4> configs;
    for (HopConfig &c : configs)
        c.workMs = work;
    configs[3].minBudgetMs = minBudget;
    ChainLab lab;
    if (!lab.start(ctx, configs)) return setupFailed("could not build the chain: " + lab.error);

    Verdict check;
    std::ostringstream s;
    for (const char *key : {"budget_ms", "tight_budget_ms"}) {
        const std::int64_t budget = p.integer(key);
        const ChainRun run = runChain(ctx, lab, budget);
        const std::string &id = run.callIds[0];
        check.addCall(run.client);
        if (!s.str().empty()) s << "; ";
        s << id << " (budget " << budget << " ms): " << std::string(grpcStatusName(run.client.code)) << " in "
          << run.elapsedMs() << " ms, left on arrival " << run.budgets();

        // Propagation: every hop knows the deadline, and each has less left than the one before.
        for (size_t i = 0; i < size_t(run.reached()); ++i) {
            check.expect(run.hop[i]->budgetNs.has_value(),
                         id + ": " + kHopNames[i] + " to receive the propagated deadline");
            if (i > 0 && run.hop[i]->budgetNs && run.hop[i - 1]->budgetNs)
                check.expect(*run.hop[i]->budgetNs < *run.hop[i - 1]->budgetNs,
                             id + ": less budget at " + kHopNames[i] + " than at " + kHopNames[i - 1]);
        }
        // D's rule, whatever the timing did: fail fast exactly when too little is left.
        if (const auto &d = run.hop[3]; d && d->budgetNs) {
            const bool shouldFail = *d->budgetNs < std::int64_t(minBudget) * 1'000'000;
            check.expect(d->failedFast == shouldFail,
                         id + ": D to " + (shouldFail ? "fail fast" : "do its work") + " with " +
                             std::to_string(toMs(*d->budgetNs)) + " ms left (threshold " +
                             std::to_string(minBudget) + " ms)");
            if (d->failedFast) s << ", D failed fast";
        }

        // What the parameters predict: D is left with the budget minus three hops' work.
        const std::int64_t atD = budget - 3 * work;
        if (atD >= minBudget + kMarginMs && budget >= 4 * work + kMarginMs) {
            check.expect(run.reached() == 4,
                         id + ": all 4 hops reached, only " + std::to_string(run.reached()));
            check.expect(run.client.code == kOk, id + ": OK, got " +
                                                     std::string(grpcStatusName(run.client.code)) + " (" +
                                                     run.client.message + ")");
            expectCalls(run, check, {kOk, kOk, kOk, kOk}, {kOk, kOk, kOk, kOk});
        } else if (atD >= minBudget + kMarginMs && budget <= 4 * work - kMarginMs) {
            // D takes the call but cannot finish in time: the deadline, not D, ends the chain, and D's work
            // is thrown away. What fail-fast saves.
            check.expect(run.reached() == 4,
                         id + ": all 4 hops reached, only " + std::to_string(run.reached()));
            check.expect(run.hop[3] && !run.hop[3]->failedFast, id + ": D to take the call");
            check.expect(run.client.code == kDeadlineExceeded,
                         id + ": DEADLINE_EXCEEDED at the client, got " +
                             std::string(grpcStatusName(run.client.code)));
            check.expect(std::abs(run.elapsedMs() - budget) <= kMarginMs,
                         id + ": the client to give up at its " + std::to_string(budget) +
                             " ms deadline, after " + std::to_string(run.elapsedMs()) + " ms");
            if (run.hop[3] && run.hop[3]->doneNs > run.client.endNs)
                s << ", D finished its work " << toMs(run.hop[3]->doneNs - run.client.endNs)
                  << " ms after the deadline";
            // A, B and C see their calls to the next hop die with the deadline; D's answer comes too late.
            expectCalls(run, check,
                        {kDeadlineExceeded, kDeadlineExceeded, kDeadlineExceeded, kDeadlineExceeded},
                        {kGaveUp, kGaveUp, kGaveUp, kOk});
        } else if (atD > kMarginMs && atD <= minBudget - kMarginMs) {
            check.expect(run.reached() == 4,
                         id + ": all 4 hops reached, only " + std::to_string(run.reached()));
            check.expect(run.hop[3] && run.hop[3]->failedFast,
                         id + ": D to fail fast (about " + std::to_string(atD) + " ms left)");
            check.expect(run.client.code == kDeadlineExceeded &&
                             run.client.message.find("failing fast") != std::string::npos,
                         id + ": DEADLINE_EXCEEDED from D failing fast, got " +
                             std::string(grpcStatusName(run.client.code)) + " (" + run.client.message + ")");
            // Failing fast means answering before the deadline, not at it.
            check.expect(run.elapsedMs() < budget - kMarginMs / 2,
                         id + ": the failure before the " + std::to_string(budget) + " ms deadline");
            const std::array<int, 4> failed = {kDeadlineExceeded, kDeadlineExceeded, kDeadlineExceeded,
                                               kDeadlineExceeded};
            expectCalls(run, check, failed, failed);
        } else {
            // Too close to a threshold to say which way it goes; the checks above still hold.
            s << " (parameters too close to a threshold for a firm expectation)";
            for (size_t i = 0; i < size_t(run.reached()); ++i)
                check.addExpected({run.callIds[i], 1, run.hop[i]->code});
        }
    }
    return check.result(s.str());
}

// deadline-reset and gateway-drops-deadline: B passes its deadline on wrongly; C and D go on regardless.
ScenarioResult runBrokenChain(const ScenarioContext &ctx, const ScenarioParams &p, DeadlinePassing passing)
{
    const int work = p.integer("work_ms");
    const int minBudget = p.integer("min_budget_ms");
    const std::int64_t budget = p.integer("budget_ms");
    const int resetMs = passing == DeadlinePassing::Reset ? p.integer("reset_ms") : 0;
    std::array<HopConfig, 4> configs;
    for (HopConfig &c : configs)
        c.workMs = work;
    configs[1].passing = passing;
    configs[1].resetMs = resetMs;
    configs[3].minBudgetMs = minBudget;
    ChainLab lab;
    if (!lab.start(ctx, configs)) return setupFailed("could not build the chain: " + lab.error);

    const ChainRun run = runChain(ctx, lab, budget);
    const std::string &id = run.callIds[0];
    Verdict check;
    check.addCall(run.client);
    std::ostringstream s;
    s << id << " (budget " << budget << " ms): " << std::string(grpcStatusName(run.client.code)) << " in "
      << run.elapsedMs() << " ms, left on arrival " << run.budgets();

    check.expect(run.reached() == 4, "all 4 hops reached, only " + std::to_string(run.reached()));
    const auto &b = run.hop[1], &c = run.hop[2], &d = run.hop[3];
    if (b) {
        check.expect(b->budgetNs.has_value(), "B to receive the propagated deadline");
        check.expect(b->calledNext, "B to call C");
    }
    if (passing == DeadlinePassing::Reset && b && c && b->budgetNs) {
        // The ground truth of the reset: C was given more time than B had left, although time passed.
        check.expect(c->budgetNs && *c->budgetNs > *b->budgetNs,
                     "C to get more budget than B had (B " + std::to_string(toMs(*b->budgetNs)) + " ms, C " +
                         (c->budgetNs ? std::to_string(toMs(*c->budgetNs)) + " ms" : std::string("none")) +
                         ")");
        if (c->budgetNs && *c->budgetNs > *b->budgetNs)
            s << ": the budget grew at B by " << toMs(*c->budgetNs - *b->budgetNs) << " ms";
        check.expect(!d || (d->budgetNs && c->budgetNs && *d->budgetNs < *c->budgetNs),
                     "C to propagate its (reset) deadline to D");
    }
    if (passing == DeadlinePassing::Drop && b && c) {
        check.expect(b->calledNext && !b->nextBudgetNs, "B to call C without a deadline");
        check.expect(!c->budgetNs, "C to see no deadline at all");
        check.expect(!d || !d->budgetNs, "D to see no deadline (C propagates what it got: nothing)");
        if (!c->budgetNs && d && !d->budgetNs) s << ": C and D saw no deadline";
    }
    // D's rule holds whatever B did: a call without a deadline never fails fast, a reset one only if even the
    // fresh budget is too small.
    if (d)
        check.expect(
            d->failedFast == (d->budgetNs && *d->budgetNs < std::int64_t(minBudget) * 1'000'000),
            std::string("D ") + (d->failedFast ? "not " : "") + "to fail fast with " +
                (d->budgetNs ? std::to_string(toMs(*d->budgetNs)) + " ms" : std::string("no deadline")) +
                " left (threshold " + std::to_string(minBudget) + " ms)");

    const bool tooSlow = 4 * work >= budget + kMarginMs, inTime = 4 * work + kMarginMs <= budget;
    if (tooSlow) {
        // The client gives up at its deadline; C and D, cut off from it, finish their work for nobody.
        check.expect(run.client.code == kDeadlineExceeded,
                     std::string("DEADLINE_EXCEEDED at the client, got ") +
                         std::string(grpcStatusName(run.client.code)));
        check.expect(std::abs(run.elapsedMs() - budget) <= kMarginMs,
                     "the client to give up at its " + std::to_string(budget) + " ms deadline, after " +
                         std::to_string(run.elapsedMs()) + " ms");
        if (d && d->doneNs > run.client.endNs)
            s << "; D answered " << toMs(d->doneNs - run.client.endNs) << " ms after the client gave up";
        check.expect(d && d->doneNs > run.client.endNs, "D to go on working after the client gave up");
        // On the wire client->A and A->B end at the deadline while B->C and C->D succeed. A gives up with its
        // propagated call to B; B answers OK, too late for anyone.
        expectCalls(run, check, {kDeadlineExceeded, kDeadlineExceeded, kOk, kOk}, {kGaveUp, kOk, kOk, kOk});
    } else if (inTime) {
        check.expect(run.client.code == kOk,
                     std::string("OK at the client, got ") + std::string(grpcStatusName(run.client.code)));
        expectCalls(run, check, {kOk, kOk, kOk, kOk}, {kOk, kOk, kOk, kOk});
    } else {
        s << " (parameters too close to the deadline for a firm expectation)";
        for (size_t i = 0; i < size_t(run.reached()); ++i)
            check.addExpected({run.callIds[i], 1, run.hop[i]->code});
    }
    return check.result(s.str());
}

ScenarioResult runDeadlineReset(const ScenarioContext &ctx, const ScenarioParams &p)
{
    return runBrokenChain(ctx, p, DeadlinePassing::Reset);
}

ScenarioResult runGatewayDropsDeadline(const ScenarioContext &ctx, const ScenarioParams &p)
{
    return runBrokenChain(ctx, p, DeadlinePassing::Drop);
}

} // namespace

void appendChainScenarios(std::vector<Scenario> &out)
{
    out.push_back({.name = "deadline-chain", .run = runDeadlineChain});
    out.push_back({.name = "deadline-reset", .run = runDeadlineReset});
    out.push_back({.name = "gateway-drops-deadline", .run = runGatewayDropsDeadline});
}

} // namespace rpcscope::lab
