"""Scenario D: S1's load while every new message is delivered to one fast
destination (`edihub listen --quiet`, the demo receiver, on loopback).

The destination is added through the admin API just before the run (so
only the run's messages get deliveries) and disabled right after it (so
later scenarios are not affected). Measured, beside S1's columns:

- ingest req/s against S1's (the target: at least 0.85 x S1); when S1 is
  not part of the run, D first runs S1's load without the destination as
  its own baseline (`D_base`);
- deliveries made per second during the measured window, and how long the
  queue took to drain after the load stopped;
- the queue depth (`edihub_delivery_queue_depth`) sampled every second over
  the run: its maximum and its last value (bounded: it does not grow with
  the run's length);
- CPU: edihub's extra CPU-ms per delivered message over the baseline's per
  message, and the receiver's;
- the drain on its own (the queue left when the load stops, delivered with
  no ingest beside it): deliveries per second and the CPU-ms per delivery
  of edihub, PostgreSQL and the receiver, i.e. what a delivery costs. With
  BENCH_PROFILE=1, a perf profile of edihub during the drain
  (target/bench/perf-d-drain.txt).

D2 reads the same run the way issue-level targets put it: what a delivery
costs edihub and PostgreSQL together, the receiver's CPU excluded (the run's
edihub + PostgreSQL CPU beyond what its messages cost to ingest at the
baseline's rate, per delivery), against one ingest's (the baseline's edihub +
PostgreSQL CPU per message); and the end-to-end rate, messages stored *and*
delivered per second (the lower of the two rates), against the baseline's.
"""

import json
import os
import re
import subprocess
import threading
import time
import urllib.request

DESTINATION = "bench-sink"
SINK_PORT = 18482
# Deliveries the drain needs before CPU is divided by them: fewer, and the
# queue was (nearly) empty when the load stopped.
DRAIN_MEASURABLE = 1000


def _admin(base, method, path, token, body=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("Authorization", "Bearer " + token)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status


def _gauge(base, name):
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(r'^' + name + r'\{destination="' + DESTINATION + r'"\} ([0-9.e+-]+)$', text, re.M)
    return float(m.group(1)) if m else None


def _handoff(base):
    """First attempts leased at the insert, those claimed that sent the
    envelope the receive route handed over, and those that read the store
    (`edihub_delivery_handoff_total`)."""
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        text = r.read().decode()
    found = dict(re.findall(r'^edihub_delivery_handoff_total\{result="(leased|hit|miss)"\} (\d+)$', text, re.M))
    return {k: int(found.get(k, 0)) for k in ("leased", "hit", "miss")}


def _delivered(base):
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(r'^edihub_delivery_attempts_total\{destination="' + DESTINATION + r'",outcome="delivered"\} (\d+)$',
                  text, re.M)
    return int(m.group(1)) if m else 0


class Sampler(threading.Thread):
    """Reads the queue depth from /metrics every second until stopped."""

    def __init__(self, base):
        super().__init__(daemon=True)
        self.base, self.samples, self.stop = base, [], threading.Event()

    def run(self):
        while not self.stop.wait(1.0):
            try:
                v = _gauge(self.base, "edihub_delivery_queue_depth")
            except OSError:
                continue
            if v is not None:
                self.samples.append(v)


def run(server, s1, load, edihub, work, tenant, env, admin_token, cpu_of, pg, log, profile=None):
    """Runs D on `server`; `load(name)` runs S1's load as scenario `name`
    and returns its result; `s1` is S1's result or None; `pg` has the
    cluster's probes: `cpu()` (CPU seconds), `reset()` and `statements()`
    (pg_stat_statements); `profile(seconds)`, if given, profiles edihub
    during the drain. Returns D's result (with `base`, the baseline used)."""
    base = s1 or load("D_base")
    sink_log = open(os.path.join(work, "edihub-listen.log"), "w")
    sink = subprocess.Popen([edihub, "listen", "--quiet", "--port", str(SINK_PORT)], stdout=sink_log,
                            stderr=subprocess.STDOUT)
    with open(os.path.join(work, "pids"), "a") as f:
        f.write(f"{sink.pid}\n")
    time.sleep(0.5)
    if sink.poll() is not None:
        raise SystemExit("edihub listen exited at start:\n" + open(sink_log.name).read())
    definition = {"tenant": tenant, "environment": env, "url": f"http://127.0.0.1:{SINK_PORT}/in",
                  "format": "envelope", "timeout_secs": 10}
    _admin(server.base, "PUT", f"/admin/destinations/{DESTINATION}", admin_token, definition)
    sampler = Sampler(server.base)
    sampler.start()
    sink_cpu0 = cpu_of(sink.pid)
    try:
        res = load("D")
        pg["reset"]()
        drain0 = (time.time(), _delivered(server.base), cpu_of(server.pid), pg["cpu"](), cpu_of(sink.pid))
        profiling = profile(30) if profile else None
        while time.time() - drain0[0] < 120:
            depth = _gauge(server.base, "edihub_delivery_queue_depth")
            if depth == 0:
                break
            time.sleep(0.5)
        drain1 = (time.time(), _delivered(server.base), cpu_of(server.pid), pg["cpu"](), cpu_of(sink.pid))
        res["drain_s"] = drain1[0] - drain0[0]
        res["drain"] = _drain_costs(drain0, drain1)
        res["drain"]["top_statements"] = pg["statements"]()
        if profiling:
            profiling()
    finally:
        sampler.stop.set()
        sampler.join()
        sink_cpu = cpu_of(sink.pid) - sink_cpu0
        _admin(server.base, "POST", f"/admin/destinations/{DESTINATION}/disable", admin_token)
        sink.terminate()
        sink.wait(10)
    res["base"] = {k: base[k] for k in ("name", "rps", "ms_per_msg_edihub", "ms_per_msg_pg")}
    res["depth_max"] = max(sampler.samples, default=None)
    res["depth_last"] = sampler.samples[-1] if sampler.samples else None
    res["depth_samples"] = len(sampler.samples)
    res["depth_series"] = sampler.samples
    res["delivered_total"] = _delivered(server.base)
    res["handoff"] = _handoff(server.base)
    secs = res["wall"]
    res["delivered_per_s"] = res.get("delivered", 0) / secs if secs else 0.0
    delivered = max(1, res.get("delivered", 0))
    res["extra_ms_per_delivery"] = (res["cpu_edihub"] * 1000 - base["ms_per_msg_edihub"] * res["requests"]) / delivered
    res["sink_ms_per_delivery"] = sink_cpu * 1000 / delivered
    res["extra_pg_ms_per_delivery"] = (res["cpu_pg"] * 1000 - base["ms_per_msg_pg"] * res["requests"]) / delivered
    res["d2"] = d2(res, base)
    dr = res["drain"]
    log(f"D queue depth each second: {[int(v) for v in sampler.samples]}")
    if dr["delivered"] < DRAIN_MEASURABLE:
        log(f"D drain: {dr['delivered']} left when the load stopped, too few to measure a delivery's cost by")
    else:
        log(f"D drain: {dr['delivered']} delivered at {dr['per_s']:.0f}/s, CPU-ms per delivery: edihub "
            f"{dr['edihub_ms']:.3f}, PG {dr['pg_ms']:.3f}, receiver {dr['sink_ms']:.3f}")
    log(f"D: ingest {res['rps']:.0f} req/s vs {base['rps']:.0f} ({base['name']}), delivered "
        f"{res['delivered_per_s']:.0f}/s, queue depth max {res['depth_max']} last {res['depth_last']}, drained in "
        f"{res['drain_s']:.1f} s, extra edihub CPU {res['extra_ms_per_delivery']:.3f} ms/delivery, receiver "
        f"{res['sink_ms_per_delivery']:.3f} ms/delivery, handoff {res['handoff']['leased']} leased at the "
        f"insert, {res['handoff']['hit']} hits and {res['handoff']['miss']} misses")
    return res


def d2(d, base):
    """D2's figures from D's run `d` and its baseline."""
    ingest_ms = base["ms_per_msg_edihub"] + base["ms_per_msg_pg"]
    delivery_ms = d["extra_ms_per_delivery"] + d["extra_pg_ms_per_delivery"]
    end_to_end = min(d["rps"], d["delivered_per_s"])
    return {"ingest_ms": ingest_ms, "delivery_ms": delivery_ms,
            "cost_ratio": delivery_ms / ingest_ms if ingest_ms else 0.0,
            "end_to_end_per_s": end_to_end, "end_to_end_ratio": end_to_end / base["rps"] if base["rps"] else 0.0}


def _drain_costs(t0, t1):
    """Deliveries per second and CPU-ms per delivery between two readings
    of (time, delivered, edihub CPU, PostgreSQL CPU, receiver CPU)."""
    n = t1[1] - t0[1]
    per = 1000 / max(1, n)
    return {"delivered": n, "per_s": n / max(1e-9, t1[0] - t0[0]), "edihub_ms": (t1[2] - t0[2]) * per,
            "pg_ms": (t1[3] - t0[3]) * per, "sink_ms": (t1[4] - t0[4]) * per}


def render(d):
    b = d["base"]
    ratio = d["rps"] / b["rps"] if b["rps"] else 0.0
    return [
        "Scenario D: S1's load with one fast destination (`edihub listen --quiet` on loopback, envelope format).",
        "",
        "| ingest req/s | baseline req/s | ratio | delivered/s | queue depth max / last (samples) | drained in s "
        "| edihub CPU-ms/msg | extra edihub CPU-ms per delivery | receiver CPU-ms per delivery |",
        "|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
        f"| {d['rps']:,.0f} | {b['rps']:,.0f} ({b['name']}) | {ratio:.2f} | {d['delivered_per_s']:,.0f} | "
        f"{d['depth_max']} / {d['depth_last']} ({d['depth_samples']}) | {d['drain_s']:.1f} | "
        f"{d['ms_per_msg_edihub']:.3f} | {d['extra_ms_per_delivery']:.3f} | {d['sink_ms_per_delivery']:.3f} |",
    ] + render_d2(d) + render_drain(d)


def render_d2(d):
    x = d.get("d2")
    if not x:
        return []
    return [
        "",
        f"D2 (the same run): a delivery costs edihub {d['extra_ms_per_delivery']:.3f} and PostgreSQL "
        f"{d['extra_pg_ms_per_delivery']:.3f} CPU-ms beyond the ingest, {x['delivery_ms']:.3f} in all against "
        f"{x['ingest_ms']:.3f} for one ingest ({x['cost_ratio']:.2f} ×; the receiver's "
        f"{d['sink_ms_per_delivery']:.3f} excluded); stored and delivered {x['end_to_end_per_s']:,.0f} messages "
        f"per second, {x['end_to_end_ratio']:.2f} × {d['base']['name']}." + handoff_text(d),
    ]


def handoff_text(d):
    h = d.get("handoff")
    if not h:
        return ""
    leased, hit, miss = h.get("leased", 0), h["hit"], h["miss"]
    return (f" First attempts leased at the insert: {leased:,} of {leased + hit + miss:,}; that sent the "
            f"envelope the receive route handed over: {leased + hit:,}.")


def render_drain(d):
    dr = d.get("drain")
    if not dr:
        return []
    if dr["delivered"] < DRAIN_MEASURABLE:
        return ["", f"The drain alone: {dr['delivered']:,} deliveries were left when the load stopped "
                    f"(delivered in {d['drain_s']:.1f} s), too few to measure a delivery's cost by."]
    total = dr["edihub_ms"] + dr["pg_ms"] + dr["sink_ms"]
    return [
        "",
        "The drain alone (the queue left when the load stopped, delivered with no ingest beside it): what "
        "one delivery costs.",
        "",
        "| delivered | per s | edihub CPU-ms per delivery | PostgreSQL CPU-ms | receiver CPU-ms | all three |",
        "|--:|--:|--:|--:|--:|--:|",
        f"| {dr['delivered']:,} | {dr['per_s']:,.0f} | {dr['edihub_ms']:.3f} | {dr['pg_ms']:.3f} | "
        f"{dr['sink_ms']:.3f} | {total:.3f} |",
    ]


def targets(d):
    """(scenario, target, measured, met) of scenario D."""
    if not d:
        return []
    b = d["base"]
    ratio = d["rps"] / b["rps"] if b["rps"] else 0.0
    out = [("D", "ingest ≥ 0.85 × S1 with one fast destination", f"{ratio:.2f} ({d['rps']:,.0f} vs {b['rps']:,.0f})",
            ratio >= 0.85)]
    # Bounded: the queue drains within a few seconds of the load stopping,
    # i.e. delivery kept up instead of building a backlog proportional to the run.
    bounded = d["depth_last"] is not None and d["drain_s"] <= 10
    out.append(("D", "queue drained ≤ 10 s after the load", f"max {d['depth_max']}, drained in {d['drain_s']:.1f} s",
                bounded))
    x = d.get("d2")
    if x:
        out.append(("D2", "edihub + PostgreSQL CPU per delivery ≤ 0.4 × one ingest's, the receiver's excluded",
                    f"{x['cost_ratio']:.2f} ({x['delivery_ms']:.3f} vs {x['ingest_ms']:.3f} CPU-ms)",
                    x["cost_ratio"] <= 0.4))
        out.append(("D2", "stored and delivered per second ≥ 0.7 × S1",
                    f"{x['end_to_end_ratio']:.2f} ({x['end_to_end_per_s']:,.0f} vs {b['rps']:,.0f})",
                    x["end_to_end_ratio"] >= 0.7))
    return out
