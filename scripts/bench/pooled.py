"""Scenario R: edihub through PgBouncer in transaction mode
(`database_pooler = "transaction"`, docs/scale.md), on the same cluster as S1.

- R1: S1's load (unique ORDERS05, all connections) at one replica through
  PgBouncer: the cost of the pooler against S1 connected directly.
- R2: two replicas through PgBouncer, each driven by its own wrk with half
  the connections and one thread, both at once: the aggregate rate and its
  ratio to R1 in the same run (on 2 cores the replicas share the CPU with
  PostgreSQL, so the ratio shows what a second process costs or gains, not
  scaling on more machines).

bench.sh starts PgBouncer (scripts/lib/pgbouncer.sh) in front of the
throwaway cluster and passes its URL and pid (BENCH_POOLER_URL,
BENCH_POOLER_PID). Columns beside S1's: PgBouncer's own CPU per message.
"""

import concurrent.futures
import os

PORTS = (18483, 18484)


def _config(b, port, name):
    """edihub-pg.toml with the pooler's URL, `database_pooler` and `port`."""
    url = b.E["BENCH_POOLER_URL"].rsplit("/", 1)[0] + "/" + b.DB
    lines = []
    for line in open(os.path.join(b.WORK, "edihub-pg.toml"), encoding="utf-8"):
        if line.startswith("listen = "):
            line = f'listen = "127.0.0.1:{port}"\n'
        elif line.startswith("database_url = "):
            line = f'database_url = "{url}"\ndatabase_pooler = "transaction"\n'
        lines.append(line)
    path = os.path.join(b.WORK, f"edihub-{name}.toml")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines)
    return path


def _pooler_cpu(b):
    return b.cpu_of(int(b.E["BENCH_POOLER_PID"]))


def one_replica(b, template, docbase, body_bytes):
    """R1: S1's load at one replica through PgBouncer."""
    server = b.Server("r1", _config(b, PORTS[0], "r1"), PORTS[0])
    try:
        pooler0 = _pooler_cpu(b)
        res = b.scenario("R1", server, "/api/edi-hub/receive-message", "unique", template, docbase,
                         body_bytes=body_bytes)
        res["cpu_pooler"] = _pooler_cpu(b) - pooler0
        res["cpu_other"] = max(0.0, res["cpu_other"] - res["cpu_pooler"])
    finally:
        server.stop()
    res["ms_per_msg_pooler"] = res["cpu_pooler"] * 1000 / max(1, res["requests"])
    res["replicas"] = 1
    return res


def _both(b, servers, template, docbase, duration, tag):
    """One wrk per replica, half the connections each, at once."""
    conns = max(1, b.CONNS // len(servers))
    with concurrent.futures.ThreadPoolExecutor(len(servers)) as pool:
        runs = [pool.submit(b.wrk, s, "/api/edi-hub/receive-message", "unique", template, f"{tag}{i}",
                            docbase + i * 10**12, duration, conns, 1)
                for i, s in enumerate(servers)]
        return [r.result() for r in runs]


def two_replicas(b, template, docbase, body_bytes):
    """R2: two replicas through PgBouncer, driven at once."""
    servers = [b.Server(f"r2{c}", _config(b, port, f"r2{c}"), port) for c, port in zip("ab", PORTS)]
    try:
        b.log(f"R2: warm-up {b.WARMUP} s, then {b.DURATION} s, {b.CONNS // 2} connections per replica")
        if b.WARMUP > 0:
            _both(b, servers, template, docbase + 9 * 10**12, b.WARMUP, f"{b.RUN_TAG}R2w")
        cpu0 = [b.cpu_of(s.pid) for s in servers]
        pooler0 = _pooler_cpu(b)
        b.stats_reset()
        w = b.Window(None)
        runs = _both(b, servers, template, docbase, b.DURATION, f"{b.RUN_TAG}R2")
        res = w.close(sum(r["cpu"] for r in runs))
        res["cpu_edihub"] = sum(b.cpu_of(s.pid) - c for s, c in zip(servers, cpu0))
        res["cpu_pooler"] = _pooler_cpu(b) - pooler0
        res["cpu_other"] = max(0.0, res["cpu_other"] - res["cpu_edihub"] - res["cpu_pooler"])
        res["rss_mb"] = max(b.vm_hwm_mb(s.pid) for s in servers)
    finally:
        for s in servers:
            s.stop()
    requests = sum(r["requests"] for r in runs)
    secs = max(r["duration_us"] for r in runs) / 1e6
    res.update(name="R2", requests=requests, rps=requests / secs, connections=b.CONNS, replicas=2,
               per_replica=[r["requests"] / (r["duration_us"] / 1e6) for r in runs],
               p50_ms=max(r["lat_p50_us"] for r in runs) / 1000, p99_ms=max(r["lat_p99_us"] for r in runs) / 1000,
               errors={k: sum(r[k] for r in runs) for k in ("connect_errors", "read_errors", "write_errors", "status_errors",
                                                            "timeouts") if any(r[k] for r in runs)},
               mb_s=requests * body_bytes / secs / 1e6)
    for k in ("edihub", "pg", "loadgen", "pooler"):
        res[f"ms_per_msg_{k}"] = res[f"cpu_{k}"] * 1000 / max(1, requests)
    b.log(f"R2: {res['rps']:.0f} req/s ({', '.join(f'{x:.0f}' for x in res['per_replica'])}), p99 "
          f"{res['p99_ms']:.2f} ms, edihub {res['ms_per_msg_edihub']:.3f} CPU-ms/msg, PG {res['ms_per_msg_pg']:.3f}, "
          f"PgBouncer {res['ms_per_msg_pooler']:.3f}, errors {res['errors']}")
    return res


def run(b, template, body_bytes):
    """R1 then R2; returns {"R1": …, "R2": …}."""
    return {"R1": one_replica(b, template, 10 * 10**14, body_bytes),
            "R2": two_replicas(b, template, 11 * 10**14, body_bytes)}


def render(scenarios, s1):
    r1, r2 = scenarios["R1"], scenarios["R2"]
    out = ["Scenario R: S1's load through PgBouncer 1.18 (transaction mode, `database_pooler = \"transaction\"`); "
           "R2: two replicas, one wrk each with half the connections, p50/p99 the worse replica's.", "",
           "| run | replicas | req/s | p50 ms | p99 ms | edihub CPU-ms/msg | PG CPU-ms/msg | PgBouncer CPU-ms/msg "
           "| peak RSS MB | ratio | errors |",
           "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|---|"]
    for s, ratio in ((r1, f"{r1['rps'] / s1['rps']:.2f} of S1" if s1 else "–"),
                     (r2, f"{r2['rps'] / r1['rps']:.2f} of R1")):
        errors = ", ".join(f"{k}={v}" for k, v in s["errors"].items()) or "none"
        out.append(f"| {s['name']} | {s['replicas']} | {s['rps']:,.0f} | {s['p50_ms']:.2f} | {s['p99_ms']:.2f} | "
                   f"{s['ms_per_msg_edihub']:.3f} | {s['ms_per_msg_pg']:.3f} | {s['ms_per_msg_pooler']:.3f} | "
                   f"{s['rss_mb']:.1f} | {ratio} | {errors} |")
    return out
