#pragma once

#include "faultset.h"

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct nghttp2_hd_deflater;
struct nghttp2_hd_inflater;

namespace rpcscope {

// The stream fault rules (abort, delay, reset, goaway) of one relayed HTTP/2 connection. The relay hands it
// every byte read from either side; it frames both directions and writes out what each side is to get:
// frames passed on as they came, header blocks re-encoded with its own HPACK encoder toward each side (so a
// block it swallows or holds never puts the peers' dynamic tables out of step), and the frames it makes up
// (a Trailers-Only answer, RST_STREAM, GOAWAY, the WINDOW_UPDATE that returns the credit of swallowed DATA),
// always between whole frames. Only a connection of a hop with a stream rule is given one: every other
// connection is relayed byte for byte.
class StreamFaults
{
public:
    // What a rule did to a stream, for the timeline (a FaultInjection notice on that stream).
    struct Injection
    {
        std::uint32_t stream = 0;
        size_t rule = 0;  // 0-based index into the FaultSet
        std::string what; // "fault: abort UNAVAILABLE before the server (rule 2)"
        std::string text; // the rule in the compact syntax
    };

    // `origin`: where the rules' time windows start; `seed`: for percent= and jitter.
    StreamFaults(std::shared_ptr<FaultSet> faults, std::string hop, std::int64_t origin, std::uint64_t seed);
    ~StreamFaults();
    StreamFaults(const StreamFaults &) = delete;
    StreamFaults &operator=(const StreamFaults &) = delete;

    // Bytes read from the client / the server at `now`. What is to be written goes to toServer / toClient.
    void fromClient(const std::uint8_t *data, size_t size, std::int64_t now);
    void fromServer(const std::uint8_t *data, size_t size, std::int64_t now);
    // Releases what a delay held once its time has come.
    void onTime(std::int64_t now);
    // When onTime() next has something to do (0: nothing held).
    std::int64_t nextTime() const;
    // The same as a poll timeout from `now`: whole milliseconds, rounded up, at most a minute; -1 nothing
    // held.
    int pollTimeout(std::int64_t now) const;

    // Filled by the calls above and taken (cleared) by the relay.
    std::string toServer;
    std::string toClient;
    std::vector<Injection> injections;
    // Set when the connection cannot be relayed any more (a header block that does not decode): why.
    std::string failure;

private:
    struct Field
    {
        std::string name;
        std::string value;
        std::uint8_t flags = 0; // NGHTTP2_NV_FLAG_NO_INDEX: the sender asked that it never be indexed
    };
    struct HeaderList
    {
        std::vector<Field> fields;
    };
    // A frame held by a delay: raw bytes, or a header block kept decoded and encoded only when released, so
    // that blocks reach the peer's table in the order they are sent.
    struct Held
    {
        std::string raw;
        bool headers = false;
        std::uint32_t stream = 0;
        bool endStream = false;
        HeaderList list;
    };
    struct Stream
    {
        size_t rule = 0;
        bool swallowUp = false;    // the client's frames of this stream go no further
        bool swallowDown = false;  // nor do the server's
        bool abortAfter = false;   // the server's answer is to be replaced
        std::int64_t holdUpBy = 0; // delay of the request: set when the rule chose it
        std::int64_t holdUpUntil = 0;
        std::vector<Held> heldUp;
        std::int64_t holdDownBy = -1; // delay of the response headers: -1 none
        std::int64_t holdDownUntil = 0;
        std::vector<Held> heldDown;
    };
    struct Side
    {
        std::string in; // read, not yet a whole frame
        size_t inOff = 0;
        // A header block being gathered (HEADERS then CONTINUATIONs).
        bool inBlock = false;
        std::uint32_t blockStream = 0;
        std::uint8_t blockFlags = 0;
        std::string block;    // a block of several frames, gathered
        std::string blockRaw; // its frames as they came
        // The whole block and its frames as they came: into the frame read when it came in one frame (the
        // usual case, so nothing is copied), else into block and blockRaw.
        std::string_view blockView;
        std::string_view rawView;
        nghttp2_hd_inflater *inflater = nullptr; // in step with this side's sender
        nghttp2_hd_deflater *deflater = nullptr; // ours, toward the other side
        // Header blocks go on re-encoded with `deflater` (else as they came). Set at the first block this
        // side must not pass on in order (swallowed or held), for good: the receiver's table then follows
        // ours. Until then the bytes go on unchanged, so a connection no rule acts on is relayed byte for
        // byte.
        bool rewriting = false;
    };

    // What choose() needs of a request's header block.
    struct Picks
    {
        std::string path;
        std::uint64_t attempt = 1; // from grpc-previous-rpc-attempts
    };

    void feed(bool fromClient, const std::uint8_t *data, size_t size, std::int64_t now);
    // Handles the whole frames at data; returns the bytes they took.
    size_t frames(bool fromClient, const std::uint8_t *data, size_t size, std::int64_t now);
    void clientFrame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, const std::uint8_t *frame,
                     size_t len, std::int64_t now);
    void serverFrame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, const std::uint8_t *frame,
                     size_t len, std::int64_t now);
    void clientHeaders(std::uint32_t stream, bool endStream, HeaderList &&list, const Picks &picks,
                       std::int64_t now);
    void serverHeaders(std::uint32_t stream, bool endStream, HeaderList &&list, std::int64_t now);
    // Decodes a header block, keeping the decoder in step with its sender. The fields go to `out` and the
    // request's path and attempt to `picks`, each only when given: a block passed on as it came is decoded
    // for the table alone.
    bool inflate(Side &side, std::string_view block, HeaderList *out, Picks *picks);
    void writeHeaders(bool toServer, std::uint32_t stream, bool endStream, const HeaderList &list);
    void writeBlock(nghttp2_hd_deflater *deflater, std::string &out, std::uint32_t stream, bool endStream,
                    const HeaderList &list);
    // A block as it came, or re-encoded once the side is rewriting.
    void passHeaders(bool toServer, std::uint32_t stream, bool endStream, const HeaderList &list);
    void writeRst(bool toServer, std::uint32_t stream, std::uint32_t code);
    void writeWindowUpdate(bool toServer, std::uint32_t increment);
    void writeGoaway(std::uint32_t lastStream);
    void trailersOnly(std::uint32_t stream, const FaultRule &rule);
    void settings(bool fromClient, const std::uint8_t *payload, size_t len);
    // The stream rule that acts on a new stream, if any (its index), counted as it chooses.
    bool choose(const Picks &picks, std::int64_t now, size_t *rule);
    void note(std::uint32_t stream, size_t rule, const std::string &what);
    std::int64_t delayOf(const FaultRule &rule);
    void release(std::vector<Held> &held, bool toServer);

    std::shared_ptr<FaultSet> m_faults;
    std::shared_ptr<const FaultSet::Rules> m_rules;
    std::string m_hop;
    std::int64_t m_origin = 0;
    std::mt19937_64 m_random;
    Side m_up;   // client -> server
    Side m_down; // server -> client
    // Encodes what we answer the client while its side is not rewriting: literals that are never indexed, so
    // the client's table stays as the server's encoder knows it (this encoder's own table stays empty).
    nghttp2_hd_deflater *m_literal = nullptr;
    bool m_preface = false;     // the client's connection preface has been passed on
    bool m_passthrough = false; // not HTTP/2 after all: bytes go on as they came
    std::uint32_t m_lastClientStream = 0;
    std::uint32_t m_lastForwarded = 0;         // the highest stream the server has seen
    std::int64_t m_goawayLast = -1;            // the last-stream-id of our GOAWAY to the client, once sent
    std::map<std::uint32_t, Stream> m_streams; // only streams a rule chose
    std::vector<std::uint32_t> m_holding;      // of those, the ones a delay holds now
    // The table sizes our decoders of the client (up) and of the server (down) accept.
    std::uint32_t m_upInflateLimit = 4096;
    std::uint32_t m_downInflateLimit = 4096;
};

} // namespace rpcscope
