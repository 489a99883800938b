#pragma once

#include <QColor>

namespace rpcscope {

// The colours of one theme. Status colours are the same in both themes: they carry white text and read on
// a dark and a light background alike, and a legend printed in a write-up means the same as on screen.
struct TimelineTheme
{
    QColor background, headerBand, grid, text, muted, gap, deadline, expectedRange, commit;
    QColor breakerClosed, breakerOpen, breakerHalfOpen;
    QColor connLine, settings, ping, goaway, rst, stall;
    QColor phaseRequest, phaseWait, phaseResponse, phaseTrailers, frameTick;
    QColor hover, selection, rubberBand;
    QColor labMarker;
    // The rates strip: calls started, failures, retries and calls in flight.
    QColor rateCalls, rateFailures, rateRetries, rateInFlight;

    static const TimelineTheme &light()
    {
        static const TimelineTheme t{
            .background = QColor(0xffffff),
            .headerBand = QColor(0xecf0f5),
            .grid = QColor(0xe4e7eb),
            .text = QColor(0x22262b),
            .muted = QColor(0x6b727b),
            .gap = QColor(0x303a46),
            .deadline = QColor(0xc62828),
            .expectedRange = QColor::fromRgba(0x383b7dd8),
            .commit = QColor(0x6a1b9a),
            .breakerClosed = QColor(0xd4edd9),
            .breakerOpen = QColor(0xf4c7c3),
            .breakerHalfOpen = QColor(0xffe09e),
            .connLine = QColor(0x9aa3ad),
            .settings = QColor(0x55606c),
            .ping = QColor(0x1f778c),
            .goaway = QColor(0x6a1b9a),
            .rst = QColor(0xc62828),
            .stall = QColor::fromRgba(0x90f0a020),
            .phaseRequest = QColor(0x1d4e89),
            .phaseWait = QColor::fromRgba(0x70ffffff),
            .phaseResponse = QColor(0x0b6e4f),
            .phaseTrailers = QColor(0x222222),
            .frameTick = QColor(0x22262b),
            .hover = QColor::fromRgba(0x18000000),
            .selection = QColor(0x1d4e89),
            .rubberBand = QColor::fromRgba(0x403b7dd8),
            .labMarker = QColor(0xad1457),
            .rateCalls = QColor(0x1d4e89),
            .rateFailures = QColor(0xc62828),
            .rateRetries = QColor(0xd06a00),
            .rateInFlight = QColor(0x4a5560),
        };
        return t;
    }

    // Backgrounds dark enough for a dimmed room, marks light enough to read on them from the back row.
    static const TimelineTheme &dark()
    {
        static const TimelineTheme t{
            .background = QColor(0x1c1f24),
            .headerBand = QColor(0x2a2f37),
            .grid = QColor(0x333840),
            .text = QColor(0xe6e9ed),
            .muted = QColor(0x9aa3ad),
            .gap = QColor(0xc8d0d8),
            .deadline = QColor(0xff5c5c),
            .expectedRange = QColor::fromRgba(0x505a9bf0),
            .commit = QColor(0xce93d8),
            .breakerClosed = QColor(0x234d30),
            .breakerOpen = QColor(0x6b2525),
            .breakerHalfOpen = QColor(0x6b551c),
            .connLine = QColor(0x6b727b),
            .settings = QColor(0xb0b8c0),
            .ping = QColor(0x4dd0e1),
            .goaway = QColor(0xce93d8),
            .rst = QColor(0xff5c5c),
            .stall = QColor::fromRgba(0x90f0a020),
            .phaseRequest = QColor(0x90c2ff),
            .phaseWait = QColor::fromRgba(0x60000000),
            .phaseResponse = QColor(0x80e0b0),
            .phaseTrailers = QColor(0xf0f0f0),
            .frameTick = QColor(0xe6e9ed),
            .hover = QColor::fromRgba(0x20ffffff),
            .selection = QColor(0xffd54f),
            .rubberBand = QColor::fromRgba(0x505a9bf0),
            .labMarker = QColor(0xf48fb1),
            .rateCalls = QColor(0x90c2ff),
            .rateFailures = QColor(0xff6b6b),
            .rateRetries = QColor(0xffb14a),
            .rateInFlight = QColor(0xb8c2cc),
        };
        return t;
    }
};

} // namespace rpcscope
