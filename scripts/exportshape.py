#!/usr/bin/env python3
"""Compare rpcscope-json exports of lab scenarios apart from times, ports and ids.

usage: exportshape.py A.json B.json   (exit 0 when they match, 1 with the differences otherwise)
"""
import json
import re
import sys

# Times vary run to run; the expected backoff ranges come from the retry policy and must not.
KEPT_NS = {"expected_gaps_ns"}
PORT = re.compile(r"(\d{1,3}(?:\.\d{1,3}){3}|localhost|\[[0-9a-f:]+\]):\d+")
NUMBER_WITH_UNIT = re.compile(r"\d+(?:\.\d+)?\s*(ns|us|µs|ms|s)\b")


# Ids: assigned in arrival order, so concurrent clients get different ones each run.
ID_KEYS = {"id", "connection", "stream", "parent_call", "trace_id", "span_id", "call"}
# Timing races, not behaviour: BDP pings are sent when the transport decides; whether the client or the
# capture's stop closes an idle connection first is a race of milliseconds.
DROPPED = {"pings", "last_ping_rtt_ns", "open_pings", "close_reason"}
ARRIVAL = re.compile(r"(arrival|call|client|#)\s*\d+")


def norm(value, key=""):
    if isinstance(value, dict):
        out = {k: norm(v, k) for k, v in sorted(value.items()) if k not in DROPPED}
        if "key" in out and isinstance(out["key"], str):
            m = re.search(r"-(\d+)$", out["key"])
            if m:
                out["key"] = out["key"][: m.start()] + "-<n>"
                # The lab's request carries the call's key: a digit more in its arrival number is a byte more.
                for a in out.get("attempts", []):
                    if isinstance(a.get("request_bytes"), int) and a["request_bytes"] > 0:
                        a["request_bytes"] -= len(m.group(1))
        if key == "":
            # Concurrent clients finish in any order: compare calls and lab events as multisets.
            for k in ("calls", "lab_events"):
                if k in out:
                    out[k] = sorted(out[k], key=lambda c: json.dumps(c, sort_keys=True))
        return out
    if key in ID_KEYS and value is not None:
        return "<id>"
    if isinstance(value, list):
        if key.endswith("_ns") and key not in KEPT_NS:
            return [norm(v, key) for v in value]
        return [norm(v) for v in value]
    if key.endswith("_ns") and key not in KEPT_NS:
        return None if value is None else "<time>"
    if key in ("origin_wall_ns",):
        return "<time>"
    if isinstance(value, str):
        value = PORT.sub(r"\1:<port>", value)
        value = ARRIVAL.sub(r"\1 <n>", value)
        return NUMBER_WITH_UNIT.sub(r"<n>\1", value)
    return value


def main():
    a, b = (norm(json.load(open(p))) for p in sys.argv[1:3])
    if a == b:
        return 0
    diffs = []

    def walk(x, y, path):
        if len(diffs) >= 20:
            return
        if type(x) is not type(y):
            diffs.append(f"{path}: {x!r} != {y!r}")
        elif isinstance(x, dict):
            for k in sorted(set(x) | set(y)):
                walk(x.get(k, "<absent>"), y.get(k, "<absent>"), f"{path}.{k}")
        elif isinstance(x, list):
            if len(x) != len(y):
                diffs.append(f"{path}: {len(x)} items != {len(y)} items")
            for i, (p, q) in enumerate(zip(x, y)):
                walk(p, q, f"{path}[{i}]")
        elif x != y:
            diffs.append(f"{path}: {x!r} != {y!r}")

    walk(a, b, "")
    print("\n".join(diffs))
    return 1


sys.exit(main())
