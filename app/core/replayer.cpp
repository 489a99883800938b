#include "replayer.h"

#include "clock.h"
#include "timelinemodel.h"

#include <algorithm>
#include <cmath>

namespace rpcscope {

Replayer::Replayer(TimelineModel *model, QObject *parent)
    : QObject(parent), m_model(model), m_clock([] { return qint64(steadyNowNs()); })
{
    m_timer.setInterval(16);
    connect(&m_timer, &QTimer::timeout, this, &Replayer::tick);
}

void Replayer::load(const CaptureData &data)
{
    m_timer.stop();
    m_data = data;
    m_events.clear();
    m_events.reserve(data.eventCount());
    for (const EventBatch &b : data.batches)
        m_events.insert(m_events.end(), b.begin(), b.end());
    // Stable: events of one time keep the order the model first saw them in (an open before its frames).
    std::stable_sort(m_events.begin(), m_events.end(),
                     [](const WireEvent &a, const WireEvent &b) { return a.tNs < b.tNs; });
    m_startNs = m_events.empty() ? data.info.originNs : m_events.front().tNs;
    m_endNs = m_events.empty() ? m_startNs : m_events.back().tNs;
    m_next = 0;
    m_positionNs = 0;
    m_playing = false;
    m_loaded = true;
    CaptureData empty;
    empty.info = data.info;
    m_model->replay(empty);
    emit stateChanged();
    emit playheadMoved(m_startNs);
}

void Replayer::unload()
{
    m_timer.stop();
    m_playing = false;
    m_loaded = false;
    m_events.clear();
    m_events.shrink_to_fit();
    m_data = CaptureData();
    emit stateChanged();
}

qint64 Replayer::positionNs() const
{
    if (!m_playing) return m_positionNs;
    return m_positionNs + qint64(std::llround(double(m_clock() - m_anchorNs) * m_speed));
}

void Replayer::setSpeed(double speed)
{
    speed = std::clamp(speed, kMinSpeed, kMaxSpeed);
    if (speed == m_speed) return;
    m_positionNs = positionNs();
    m_anchorNs = m_clock();
    m_speed = speed;
    emit stateChanged();
}

void Replayer::play()
{
    if (!m_loaded || m_playing) return;
    if (isFinished()) { // from the start again
        CaptureData empty;
        empty.info = m_data.info;
        m_model->replay(empty);
        m_next = 0;
        m_positionNs = 0;
    }
    m_anchorNs = m_clock();
    m_playing = true;
    m_timer.start();
    emit stateChanged();
    tick();
}

void Replayer::pause()
{
    if (!m_playing) return;
    m_positionNs = positionNs();
    m_playing = false;
    m_timer.stop();
    emit stateChanged();
}

void Replayer::togglePlay()
{
    if (m_playing)
        pause();
    else
        play();
}

void Replayer::tick()
{
    if (!m_loaded) return;
    const qint64 position = positionNs();
    EventBatch batch;
    while (m_next < m_events.size() && m_events[m_next].tNs - m_startNs <= position)
        batch.push_back(m_events[m_next++]);
    if (!batch.empty()) {
        m_model->applyBatch(batch); // the run on stage, even while another one records
        emit fed(batch.size());
    }
    emit playheadMoved(m_startNs + std::min(position, m_endNs - m_startNs));
    if (m_playing && isFinished()) {
        m_positionNs = m_endNs - m_startNs;
        m_playing = false;
        m_timer.stop();
        emit stateChanged();
        emit finished();
    }
}

} // namespace rpcscope
