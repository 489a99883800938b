#include "residentmemory.h"

#include "timelinemodel.h"

#include <QElapsedTimer>
#include <algorithm>
#include <cstdio>
#include <unistd.h>

namespace rpcscope {

size_t residentBytes()
{
    long pages = 0, resident = 0;
    FILE *f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    const bool ok = std::fscanf(f, "%ld %ld", &pages, &resident) == 2;
    std::fclose(f);
    return ok ? size_t(resident) * size_t(sysconf(_SC_PAGESIZE)) : 0;
}

void countResidentMemory(TimelineModel *model, size_t baselineBytes)
{
    model->addExternalBytes(
        [model, baselineBytes, guard = false, at = QElapsedTimer(), uncounted = size_t(0)]() mutable {
            if (guard) return size_t(0); // asked again from within memoryBytes() below
            if (at.isValid() && at.elapsed() < 200) return uncounted;
            at.start();
            guard = true;
            const size_t counted = model->memoryBytes();
            guard = false;
            const size_t rss = residentBytes();
            const size_t beyond = rss > baselineBytes + counted ? rss - baselineBytes - counted : 0;
            uncounted = std::min(beyond, model->retention().maxBytes / 2);
            return uncounted;
        });
}

} // namespace rpcscope
