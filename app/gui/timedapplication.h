#pragma once

#include <QApplication>

namespace rpcscope {

// The GUI's application object. With RPCSCOPE_STALLS=MS (stallprobe.h) it also times every event the
// event loop delivers and names the ones that take MS or longer (receiver class, event type): together with
// the probes inside the model and the views, that finds what keeps the loop from turning.
class TimedApplication : public QApplication
{
public:
    TimedApplication(int &argc, char **argv);
    bool notify(QObject *receiver, QEvent *event) override;

private:
    int m_depth = 0;
    int m_thresholdMs = -1;
};

} // namespace rpcscope
