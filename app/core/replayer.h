#pragma once

#include "capturedata.h"

#include <QObject>
#include <QTimer>
#include <functional>
#include <vector>

namespace rpcscope {

class TimelineModel;

// Plays a run back into the stage model at a chosen speed, so a room can watch retries happen at a pace it
// follows. The run's events, in time order, are fed as the replay clock passes them: an event goes in once
// (its time - the run's first event) <= elapsed * speed. The clock is injectable, so tests drive virtual
// time; a timer asks tick() to catch up about 60 times a second while playing.
class Replayer : public QObject
{
    Q_OBJECT
public:
    static constexpr double kMinSpeed = 0.1;
    static constexpr double kMaxSpeed = 10.0;
    using Clock = std::function<qint64()>; // monotonic ns

    explicit Replayer(TimelineModel *model, QObject *parent = nullptr);

    // Default: the steady clock.
    void setClock(Clock clock) { m_clock = std::move(clock); }
    // Empties the model (the run's origin and frame setting kept) and stands at the start, paused.
    void load(const CaptureData &data);
    // Forgets the run; the model keeps what was fed.
    void unload();
    // The whole run that was loaded, to put it back in one go.
    const CaptureData &data() const { return m_data; }

    bool isLoaded() const { return m_loaded; }
    bool isPlaying() const { return m_playing; }
    bool isFinished() const { return m_loaded && m_next == m_events.size(); }
    double speed() const { return m_speed; }
    // Clamped to [kMinSpeed, kMaxSpeed]; the run position so far is kept.
    void setSpeed(double speed);

    // The run's first and last event times (absolute steady ns).
    qint64 startNs() const { return m_startNs; }
    qint64 endNs() const { return m_endNs; }
    // How far into the run the replay is: elapsed * speed, in run ns.
    qint64 positionNs() const;
    qint64 playheadNs() const { return m_startNs + positionNs(); }
    size_t fedEvents() const { return m_next; }
    size_t totalEvents() const { return m_events.size(); }

public slots:
    void play();
    void pause();
    void togglePlay();
    // Feeds every event the clock has passed (the timer calls it; tests call it after moving the clock).
    void tick();

signals:
    void stateChanged();
    void playheadMoved(qint64 playheadNs);
    // Events were fed (after the model applied them).
    void fed(size_t events);
    void finished();

private:
    TimelineModel *m_model;
    Clock m_clock;
    QTimer m_timer;
    CaptureData m_data;
    std::vector<WireEvent> m_events; // every event of the run, stably sorted by time
    size_t m_next = 0;
    bool m_loaded = false;
    bool m_playing = false;
    double m_speed = 1.0;
    qint64 m_startNs = 0;
    qint64 m_endNs = 0;
    qint64 m_positionNs = 0; // run ns reached when the clock read m_anchorNs
    qint64 m_anchorNs = 0;
};

} // namespace rpcscope
