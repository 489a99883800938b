// An intercepting relay copies each decrypted TLS record for the decoder thread, which frees the copy. Those
// record-sized copies come from a pool and go back to it, from whichever thread frees them, so a stream does
// not make the relay thread's heap shrink and grow again for every record.

#include "relaychunk.h"
#include "streamfaultoutput.h"

#include <QtTest>
#include <cstring>
#include <thread>
#include <vector>

using namespace rpcscope;

class TestRelayChunk : public QObject
{
    Q_OBJECT

private slots:
    void aFreedBufferIsTakenAgain()
    {
        std::uint8_t *first = nullptr;
        {
            ChunkBytes a = pooledChunkBytes();
            QVERIFY(a.get_deleter().pooled);
            first = a.get();
            std::memset(a.get(), 0xab, kPooledChunkBytes); // all of it is there to write
        }
        const size_t free = pooledChunksFree();
        QVERIFY(free >= 1);
        ChunkBytes b = pooledChunkBytes();
        QCOMPARE(b.get(), first); // the last one freed comes back first
        QCOMPARE(pooledChunksFree(), free - 1);
    }

    void aBufferFreedOnAnotherThreadComesBack()
    {
        RelayChunk chunk = copiedBytes(1, Direction::ServerToClient, 0,
                                       std::string(kPooledChunkBytes, 'x').data(), kPooledChunkBytes);
        const std::uint8_t *bytes = chunk.data.get();
        // The decoder thread frees what the relay thread took.
        std::thread([c = std::move(chunk)]() mutable { c = RelayChunk::note(1, 0, {}); }).join();
        ChunkBytes again = pooledChunkBytes();
        QCOMPARE(static_cast<const std::uint8_t *>(again.get()), bytes);
    }

    void thePoolKeepsAtMostItsShare()
    {
        std::vector<ChunkBytes> taken;
        for (size_t i = 0; i < kMaxPooledChunks + 10; ++i)
            taken.push_back(pooledChunkBytes());
        QCOMPARE(pooledChunksFree(), size_t(0));
        taken.clear(); // the ten beyond the share go back to the heap
        QCOMPARE(pooledChunksFree(), kMaxPooledChunks);
    }

    void onlyRecordSizedCopiesArePooled_data()
    {
        QTest::addColumn<int>("size");
        QTest::addColumn<bool>("pooled");
        QTest::newRow("a unary message") << 100 << false;
        QTest::newRow("just under the pool's least") << int(kPoolFromBytes) - 1 << false;
        QTest::newRow("the pool's least") << int(kPoolFromBytes) << true;
        QTest::newRow("a whole TLS record") << int(kPooledChunkBytes) << true;
        QTest::newRow("more than a record") << int(kPooledChunkBytes) + 1 << false;
    }
    void onlyRecordSizedCopiesArePooled()
    {
        QFETCH(int, size);
        QFETCH(bool, pooled);
        std::string bytes(size_t(size), '\0');
        for (size_t i = 0; i < bytes.size(); ++i)
            bytes[i] = char(i * 7);
        const RelayChunk c = copiedBytes(3, Direction::ClientToServer, 42, bytes.data(), bytes.size());
        QCOMPARE(c.kind, RelayChunk::Data);
        QCOMPARE(c.size, size_t(size));
        QCOMPARE(c.t, std::int64_t(42));
        QCOMPARE(c.data.get_deleter().pooled, pooled);
        QVERIFY(std::memcmp(c.data.get(), bytes.data(), bytes.size()) == 0);
    }
};

QTEST_GUILESS_MAIN(TestRelayChunk)
#include "tst_relaychunk.moc"
