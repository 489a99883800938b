#pragma once

#include "events.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

namespace rpcscope::heapbytes {

// What glibc's malloc takes for a block of n bytes: an 8-byte header, 16-byte alignment, a 32-byte minimum.
// The decoder's state is counted the way the model's retention counts its own (model/retention.cpp).
constexpr size_t block(size_t n)
{
    return n ? std::max<size_t>(32, (n + 8 + 15) & ~size_t(15)) : 0;
}

inline size_t string(const std::string &s)
{
    return s.capacity() > 15 ? block(s.capacity() + 1) : 0; // beyond the small-string buffer
}

// An unordered_map<K, V> of `size` entries and `buckets` buckets: a node each (next pointer, cached hash,
// the pair) and the bucket array.
template <typename K, typename V> constexpr size_t hashMap(size_t size, size_t buckets)
{
    return size * block(sizeof(void *) + sizeof(size_t) + sizeof(std::pair<const K, V>)) +
           block(buckets * sizeof(void *));
}

// A WireEvent and what it owns, as a batch in hand holds it.
inline size_t event(const WireEvent &e)
{
    size_t n = sizeof(WireEvent) + string(e.label) + string(e.reason) + string(e.payload) +
               block(e.settings.capacity() * sizeof(e.settings[0])) +
               block(e.headers.capacity() * sizeof(Header));
    for (const Header &h : e.headers)
        n += string(h.name) + string(h.value);
    if (const LabDecision *d = e.decision()) n += string(d->kind) + string(d->detail);
    if (const PeerNames *p = e.peers()) n += string(p->client) + string(p->server);
    const GrpcFields &g = e.grpc;
    n += string(g.path) + string(g.callId) + string(g.encoding) + string(g.traceId) + string(g.parentSpanId);
    return g.message ? n + string(*g.message) : n;
}

// A batch: its array (spare capacity included: a batch grown by doubling holds up to twice its events) and
// what each event owns.
inline size_t batch(const EventBatch &b)
{
    size_t n = block(b.capacity() * sizeof(WireEvent));
    for (const WireEvent &e : b)
        n += event(e) - sizeof(WireEvent);
    return n;
}

} // namespace rpcscope::heapbytes
