#!/usr/bin/env python3
"""The scenarios of `make bench`. Started by scripts/bench.sh, which
has built the release binary, run the criterion benches and started a
throwaway PostgreSQL; this script generates the inputs, starts edihub, drives
wrk and pgbench, measures CPU and memory from /proc, and writes the table.

Everything is configured through environment variables set by bench.sh:
BENCH_WORK, BENCH_PG_BIN, BENCH_PG_DATA, BENCH_PG_PORT, BENCH_EDIHUB and the
knobs documented in BENCHMARKS.md (BENCH_DURATION, BENCH_WARMUP, …).
"""
import datetime
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
import as2  # noqa: E402
import delivery  # noqa: E402
import feed  # noqa: E402
import gen  # noqa: E402
import packet  # noqa: E402
import partitions  # noqa: E402
import pooled  # noqa: E402
import summary  # noqa: E402

E = os.environ
WORK = E["BENCH_WORK"]
PG_BIN = E["BENCH_PG_BIN"]
PG_DATA = E["BENCH_PG_DATA"]
PG_PORT = E["BENCH_PG_PORT"]
EDIHUB = E["BENCH_EDIHUB"]
# Settings for every hub (BENCH_HUB_ENV): the caller's own EDIHUB_*
# variables are dropped, so a setting under test is named here.
HUB_ENV = dict(item.split("=", 1) for item in E.get("BENCH_HUB_ENV", "").split())
DURATION = int(E.get("BENCH_DURATION", "20"))
WARMUP = int(E.get("BENCH_WARMUP", "3"))
CONNS = int(E.get("BENCH_CONNECTIONS", "32"))
THREADS = int(E.get("BENCH_THREADS", "2"))
# Every scenario, in the order a full run takes them.
ALL_SCENARIOS = "S1,F,S2,S7,R,S3,S4,S5,D,A,S6,T,P"
SCENARIOS = [s.strip().upper() for s in E.get("BENCH_SCENARIOS", ALL_SCENARIOS).split(",") if s.strip()]
S6_ROWS = int(E.get("BENCH_S6_ROWS", "5000000"))
# Scenario T (scripts/bench/partitions.py): the day retention drops, and how old it is.
T_ROWS = int(E.get("BENCH_T_ROWS", "5000000"))
T_DAYS_AGO = int(E.get("BENCH_T_DAYS_AGO", "100"))
T_HOT = E.get("BENCH_T_HOT", "0") == "1"
PARTITION_DAYS = int(E.get("BENCH_PARTITION_DAYS", "81"))
OUT = E.get("BENCH_OUT", os.path.join(ROOT, "BENCHMARKS.md"))
PROFILE = E.get("BENCH_PROFILE", "0") == "1"
# The load the profile runs under: "unique" (S1's) or "mixed" (S2's).
PROFILE_MODE = E.get("BENCH_PROFILE_MODE", "unique")
S6_CEILING = E.get("BENCH_S6_CEILING", "0") == "1"
PG_SETTINGS = E.get("BENCH_PG_SETTINGS", "")
QUIET = E.get("BENCH_QUIET", "1") == "1"
DB = "edihub_bench"
PG_URL = f"postgres://postgres@127.0.0.1:{PG_PORT}/{DB}"
PORT_PG, PORT_SQLITE = 18480, 18481
LUA = os.path.join(HERE, "load.lua")
# Scenario P (scripts/bench/packet.py): the sender key, and the small sender's IDoc.
AUTH = "Bearer " + gen.API_KEY
SMALL = open(os.path.join(ROOT, "fixtures", "idoc", "orders05.xml"), "rb").read()
TICK = os.sysconf("SC_CLK_TCK")
WH_RAW_KEY = "edihub-bench-standard-webhooks-key"
RUN_TAG = "r" + format(int(time.time()) % 10**8, "x")


def log(msg):
    print(f"[make bench] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- /proc


def stat_fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    return s[s.rindex(")") + 2 :].split()


def cpu_of(pid):
    """utime + stime of one process, in seconds."""
    f = stat_fields(pid)
    return (int(f[11]) + int(f[12])) / TICK


def postmaster_pid():
    with open(os.path.join(PG_DATA, "postmaster.pid")) as f:
        return int(f.readline())


def pg_cpu():
    """The cluster's CPU seconds: the postmaster with its reaped children
    (cutime/cstime: backends that already exited) plus the live children."""
    pm = postmaster_pid()
    f = stat_fields(pm)
    total = sum(int(x) for x in f[11:15])
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            c = stat_fields(d)
        except (OSError, ValueError):
            continue
        if int(c[1]) == pm:
            total += int(c[11]) + int(c[12])
    return total / TICK


def machine_cpu():
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    total = sum(v[:8])
    return (total - idle) / TICK, total / TICK


def steal():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[7] / TICK


def vm_hwm_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def reset_hwm(pid):
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError as e:
        log(f"cannot reset the peak RSS of {pid}: {e}")


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def quiet(limit=20.0, below=0.1):
    """Before a scenario: a CHECKPOINT, so the last scenario's dirty pages
    are not written during this one, then up to `limit` s until the
    machine's CPUs are busy for less than `below` of a one-second sample
    (the last scenario's autovacuum and background writes done). Returns
    the seconds waited and the busy fraction of the last sample."""
    t0 = time.time()
    try:
        psql("CHECKPOINT")
    except subprocess.CalledProcessError:
        pass
    busy = 1.0
    while time.time() - t0 < limit:
        b0, t_0 = machine_cpu()
        time.sleep(1)
        b1, t_1 = machine_cpu()
        busy = (b1 - b0) / max(t_1 - t_0, 1e-9)
        if busy < below:
            break
    return time.time() - t0, busy


def wait_idle(limit=60.0, below=0.5):
    t0 = time.time()
    while loadavg() >= below and time.time() - t0 < limit:
        time.sleep(2)
    la = loadavg()
    log(f"load average {la:.2f} after waiting {time.time() - t0:.0f} s for an idle machine")
    return la


# --------------------------------------------------------------------------- processes


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


def psql(sql, db=DB):
    return run([f"{PG_BIN}/psql", "-h", "127.0.0.1", "-p", PG_PORT, "-U", "postgres", "-d", db,
                "-X", "-v", "ON_ERROR_STOP=1", "-Atqc", sql]).strip()


def timed(cmd, out_path, env=None):
    """Runs cmd to completion with stdout+stderr in out_path; returns (exit, CPU s, text)."""
    with open(out_path, "w") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    with open(out_path) as f:
        text = f.read()
    return p.returncode, ru.ru_utime + ru.ru_stime, text


class Server:
    def __init__(self, name, config, port, log_filter="warn"):
        self.name, self.port = name, port
        self.base = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in E.items() if not (k.startswith("EDIHUB_") or k == "DATABASE_URL")}
        env.update(HUB_ENV)
        env.update(EDIHUB_LOG=log_filter, BENCH_WH_SECRET="whsec_" + b64(WH_RAW_KEY.encode()))
        self.log_path = os.path.join(WORK, f"edihub-{name}.log")
        self.proc = subprocess.Popen([EDIHUB, "--config", config, "serve"], env=env,
                                     stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT)
        with open(os.path.join(WORK, "pids"), "a") as f:
            f.write(f"{self.proc.pid}\n")
        self.pid = self.proc.pid
        deadline = time.time() + 120
        while True:
            if self.proc.poll() is not None:
                sys.exit(f"edihub ({name}) exited at start:\n" + open(self.log_path).read()[-3000:])
            try:
                with urllib.request.urlopen(self.base + "/readyz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                sys.exit(f"edihub ({name}) not ready after 120 s")
            time.sleep(0.2)
        log(f"edihub ({name}) ready on {self.base}, pid {self.pid}")

    def metrics(self):
        with urllib.request.urlopen(self.base + "/metrics", timeout=10) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            m = re.match(r"(edihub_(?:http_requests|duplicates_blocked|messages_accepted|delivery_attempts)_total)\{(.*)\} (\d+)", line)
            if m:
                out[m.group(1) + "{" + m.group(2) + "}"] = int(m.group(3))
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        keep = os.path.join(ROOT, "target", "bench", os.path.basename(self.log_path))
        os.makedirs(os.path.dirname(keep), exist_ok=True)
        shutil.copyfile(self.log_path, keep)


def b64(b):
    import base64

    return base64.b64encode(b).decode()


def delta(after, before):
    d = {}
    for k, v in after.items():
        n = v - before.get(k, 0)
        if n:
            d[k] = n
    return d


def summarize_metrics(d):
    """`202:N 200:N` and the duplicate detectors from a metrics delta."""
    status, dup = {}, {}
    for k, v in d.items():
        if k.startswith("edihub_http_requests_total"):
            if 'route="/metrics"' in k or 'route="/readyz"' in k:
                continue  # our own polling
            s = re.search(r'status="(\d+)"', k).group(1)
            status[s] = status.get(s, 0) + v
        elif k.startswith("edihub_duplicates_blocked_total"):
            by = re.search(r'detected_by="([^"]+)"', k).group(1)
            dup[by] = dup.get(by, 0) + v
    return status, dup


# --------------------------------------------------------------------------- load


def wrk(server, path, mode, template, tag, docbase, duration, conns=CONNS, threads=THREADS, auth=None):
    auth = auth or "Bearer " + gen.API_KEY
    cmd = ["wrk", f"-t{threads}", f"-c{conns}", f"-d{duration}s", "--timeout", "30s", "-s", LUA,
           server.base + path, "--", mode, template, tag, str(docbase), auth, WH_RAW_KEY]
    code, cpu, text = timed(cmd, os.path.join(WORK, f"wrk-{tag}.out"))
    m = re.search(r"^BENCH_RESULT (\{.*\})$", text, re.M)
    if code != 0 or not m:
        sys.exit(f"wrk failed ({code}):\n{text[-3000:]}")
    r = json.loads(m.group(1))
    r["cpu"] = cpu
    return r


def pgbench(duration, tag):
    variables = json.load(open(os.path.join(WORK, "ceiling.vars")))
    cmd = [f"{PG_BIN}/pgbench", "-n", "-M", "prepared", "-c", str(CONNS), "-j", str(THREADS),
           "-T", str(duration), "-f", os.path.join(WORK, "ceiling.sql"), "-h", "127.0.0.1",
           "-p", PG_PORT, "-U", "postgres"]
    for k, v in variables.items():
        cmd += ["-D", f"{k}={v}"]
    cmd.append(DB)
    code, cpu, text = timed(cmd, os.path.join(WORK, f"pgbench-{tag}.out"))
    tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", text)
    lat = re.search(r"latency average = ([\d.]+) ms", text)
    failed = re.search(r"number of failed transactions: (\d+)", text)
    done = re.search(r"number of transactions actually processed: (\d+)", text)
    if code != 0 or not tps:
        sys.exit(f"pgbench failed ({code}):\n{text[-3000:]}")
    return {
        "tps": float(tps.group(1)),
        "lat_mean_ms": float(lat.group(1)) if lat else None,
        "failed": int(failed.group(1)) if failed else 0,
        "transactions": int(done.group(1)) if done else 0,
        "cpu": cpu,
    }


def statement_shape(query):
    """A statement's text with its bound lists collapsed: the group insert
    and the verdicts send one text per list length (`VALUES ($1, …), ($20,
    …)`, `IN ($1, $2, …)`), which pg_stat_statements counts apart."""
    q = re.sub(r"\s+", " ", query)
    q = re.sub(r"\$\d+", "$", q)
    q = re.sub(r"\$(, \$)+", "$…", q)
    q = re.sub(r"(\(\$…?\))(, \(\$…?\))+", r"\1, …", q)
    return q


def top_statements(n=int(os.environ.get("BENCH_STATEMENTS", "4"))):
    """The `n` statement shapes that took the most time (each shape's calls
    and time summed over its list lengths; the time is execution, plus
    planning with BENCH_PG_SETTINGS='-c pg_stat_statements.track_planning=on')."""
    rows = psql(
        "SELECT calls, total_exec_time + total_plan_time, regexp_replace(query, '\\s+', ' ', 'g') "
        "FROM pg_stat_statements "
        f"WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '{DB}')"
    )
    shapes = {}
    for line in rows.splitlines():
        calls, total, q = line.split("|", 2)
        s = shapes.setdefault(statement_shape(q), [0, 0.0, 0])
        s[0] += int(calls)
        s[1] += float(total)
        s[2] += 1
    out = []
    for q, (calls, total, texts) in sorted(shapes.items(), key=lambda kv: -kv[1][1])[:n]:
        out.append({"calls": calls, "total_ms": round(total, 1), "mean_ms": round(total / max(1, calls), 3),
                    "texts": texts, "query": q[:90]})
    return out


class Window:
    """CPU of edihub, the cluster, the load generator and everything else over one run."""

    def __init__(self, server):
        self.server = server
        self.t0 = time.time()
        self.edihub0 = cpu_of(server.pid) if server else 0.0
        self.pg0 = pg_cpu()
        self.busy0, self.total0 = machine_cpu()
        self.steal0 = steal()
        self.load = loadavg()

    def close(self, loadgen_cpu):
        busy, total = machine_cpu()
        edihub = (cpu_of(self.server.pid) - self.edihub0) if self.server else 0.0
        pg = pg_cpu() - self.pg0
        busy -= self.busy0
        return {
            "wall": time.time() - self.t0,
            "cpu_edihub": edihub,
            "cpu_pg": pg,
            "cpu_loadgen": loadgen_cpu,
            "cpu_other": max(0.0, busy - edihub - pg - loadgen_cpu),
            "cpu_machine": busy,
            "cpu_steal": steal() - self.steal0,
            "loadavg": self.load,
        }


def scenario(name, server, path, mode, template, docbase, conns=CONNS, threads=THREADS, body_bytes=None):
    waited, busy = quiet() if QUIET else (0.0, None)
    log(f"{name}: warm-up {WARMUP} s, then {DURATION} s with {conns} connections"
        + (f" (quiet after {waited:.0f} s, CPUs {busy:.0%} busy)" if QUIET else ""))
    reset_hwm(server.pid)
    if WARMUP > 0:
        wrk(server, path, mode, template, f"{RUN_TAG}{name}w", docbase + 9 * 10**12, WARMUP, conns, threads)
    m0 = server.metrics()
    stats_reset()
    w = Window(server)
    r = wrk(server, path, mode, template, f"{RUN_TAG}{name}", docbase, DURATION, conns, threads)
    res = w.close(r["cpu"])
    d = delta(server.metrics(), m0)
    status, dup = summarize_metrics(d)
    secs = r["duration_us"] / 1e6
    res.update(
        name=name,
        requests=r["requests"],
        rps=r["requests"] / secs,
        p50_ms=r["lat_p50_us"] / 1000,
        p90_ms=r["lat_p90_us"] / 1000,
        p99_ms=r["lat_p99_us"] / 1000,
        p999_ms=r["lat_p999_us"] / 1000,
        max_ms=r["lat_max_us"] / 1000,
        errors={k: r[k] for k in ("connect_errors", "read_errors", "write_errors", "status_errors", "timeouts") if r[k]},
        status=status,
        duplicates=dup,
        delivered=sum(v for k, v in d.items()
                      if k.startswith("edihub_delivery_attempts_total") and 'outcome="delivered"' in k),
        rss_mb=vm_hwm_mb(server.pid),
        connections=conns,
    )
    n = max(1, r["requests"])
    for k in ("edihub", "pg", "loadgen"):
        res[f"ms_per_msg_{k}"] = res[f"cpu_{k}"] * 1000 / n
    if body_bytes:
        res["body_bytes"] = body_bytes
        res["mb_s"] = r["requests"] * body_bytes / secs / 1e6
    if server.name == "pg":
        res["top_statements"] = top_statements()
    log(
        f"{name}: {res['rps']:.0f} req/s, p50 {res['p50_ms']:.2f} ms, p99 {res['p99_ms']:.2f} ms, "
        f"edihub {res['ms_per_msg_edihub']:.3f} CPU-ms/msg, PG {res['ms_per_msg_pg']:.3f}, "
        f"wrk {res['ms_per_msg_loadgen']:.3f}, other {res['cpu_other']:.1f} CPU-s, RSS {res['rss_mb']:.1f} MB, "
        f"statuses {status}, duplicates {dup}"
    )
    bad = {s: c for s, c in status.items() if not s.startswith("2")}
    if bad or res["errors"]:
        log(f"{name}: WARNING non-2xx statuses {bad} / wrk errors {res['errors']} (see {server.log_path})")
    return res


def stats_reset():
    try:
        psql("SELECT pg_stat_statements_reset()")
    except subprocess.CalledProcessError:
        pass


def ceiling(name):
    log(f"{name}: pgbench ceiling, warm-up {WARMUP} s, then {DURATION} s with {CONNS} connections")
    if WARMUP > 0:
        pgbench(WARMUP, f"{name}w")
    stats_reset()
    w = Window(None)
    r = pgbench(DURATION, name)
    res = w.close(r["cpu"])
    res.update(r)
    res["name"] = name
    n = max(1, r["transactions"])
    res["ms_per_msg_pg"] = res["cpu_pg"] * 1000 / n
    res["ms_per_msg_loadgen"] = res["cpu_loadgen"] * 1000 / n
    res["top_statements"] = top_statements()
    log(f"{name}: {r['tps']:.0f} tps, mean latency {r['lat_mean_ms']} ms, PG {res['ms_per_msg_pg']:.3f} CPU-ms/tx, "
        f"pgbench {res['ms_per_msg_loadgen']:.3f} CPU-ms/tx, failed {r['failed']}")
    return res


def profile(server, template):
    """Optional (BENCH_PROFILE=1): perf samples of edihub under S1 load (or
    S2's, with BENCH_PROFILE_MODE=mixed); written to target/bench/perf-s1*.txt
    (perf-s2*.txt)."""
    if not shutil.which("perf"):
        log("perf not installed: no profile")
        return None
    out = os.path.join(WORK, "perf.data")
    secs = max(5, DURATION // 2)
    out_all = os.path.join(WORK, "perf-all.data")
    perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "499", "--call-graph", "dwarf,16384",
                             "-p", str(server.pid), "-o", out, "--", "sleep", str(secs)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # The whole machine, without call graphs: where PostgreSQL's CPU goes.
    perf_all = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "299", "-a", "-o", out_all,
                                 "--", "sleep", str(secs)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    name = "s2" if PROFILE_MODE == "mixed" else "s1"
    wrk(server, "/api/edi-hub/receive-message", PROFILE_MODE, template, f"{RUN_TAG}P", 7 * 10**14, secs + 1)
    perf.wait()
    perf_all.wait()
    def report_all(*args):
        return subprocess.run(["perf", "report", "-i", out_all, "--stdio", *args],
                              capture_output=True, text=True).stdout

    machine_wide = ("# by command\n" + report_all("--sort", "comm", "--percent-limit", "0.5")
                    + "\n# postgres, by symbol\n"
                    + report_all("--comms", "postgres", "--sort", "symbol", "--percent-limit", "0.5")
                    + "\n# by command and symbol\n"
                    + report_all("--sort", "comm,symbol", "--percent-limit", "0.5"))
    os.makedirs(os.path.join(ROOT, "target", "bench"), exist_ok=True)
    with open(os.path.join(ROOT, "target", "bench", f"perf-{name}-machine.txt"), "w") as f:
        f.write(machine_wide)

    def report(*args):
        return subprocess.run(["perf", "report", "-i", out, "--stdio", "-g", "none", *args],
                              capture_output=True, text=True).stdout

    self_time = report("--no-children", "--sort", "symbol", "--percent-limit", "0")
    inclusive = report("--children", "--sort", "symbol", "--percent-limit", "3")
    groups = group_symbols(self_time)
    path = os.path.join(ROOT, "target", "bench", f"perf-{name}.txt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("# self time by component\n" + "\n".join(groups) + "\n\n# self time\n" + self_time
                + "\n# inclusive\n" + inclusive)
    log(f"perf report written to {path}")
    top = [ln.rstrip()[:140].rstrip() for ln in self_time.splitlines() if ln.strip() and not ln.startswith("#")][:25]
    return ["self time by component:"] + groups + ["", "top symbols (self time):"] + top


def drain_profile(server):
    """With BENCH_PROFILE=1, D's drain is profiled too: returns a function
    that starts perf on edihub for at most `secs` and returns the one that
    stops it and writes target/bench/perf-d-drain.txt (self time by
    component and symbol; the data stays beside it for `perf report`)."""
    if not PROFILE or not shutil.which("perf"):
        return None

    def start(secs):
        out = os.path.join(ROOT, "target", "bench", "perf-d-drain.data")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        out_all = os.path.join(ROOT, "target", "bench", "perf-d-drain-all.data")
        perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "499", "--call-graph", "dwarf,16384",
                                 "-p", str(server.pid), "-o", out, "--", "sleep", str(secs)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # The whole machine, without call graphs: where PostgreSQL's CPU goes.
        perf_all = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "299", "-a", "-o", out_all,
                                     "--", "sleep", str(secs)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def stop():
            for p in (perf, perf_all):
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)
                p.wait()
            machine = subprocess.run(["perf", "report", "-i", out_all, "--stdio", "--sort", "comm,symbol",
                                      "--percent-limit", "0.3"], capture_output=True, text=True).stdout
            self_time = subprocess.run(["perf", "report", "-i", out, "--stdio", "-g", "none", "--no-children",
                                        "--sort", "symbol", "--percent-limit", "0"],
                                       capture_output=True, text=True).stdout
            path = os.path.join(ROOT, "target", "bench", "perf-d-drain.txt")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("# self time by component\n" + "\n".join(group_symbols(self_time)) + "\n\n# self time\n"
                        + self_time + "\n# the whole machine, by command and symbol\n" + machine)
            log(f"perf report of D's drain written to {path}")
        return stop
    return start


def group_symbols(report_text):
    """Self time summed by component: kernel, allocator and libc memory
    functions, else the crate named by the symbol's first path segment."""
    groups = {}
    for line in report_text.splitlines():
        m = re.match(r"\s+([\d.]+)%\s+\[(.)\]\s+(.*)", line)
        if not m:
            continue
        pct, kind, sym = float(m.group(1)), m.group(2), m.group(3).strip()
        if kind == "k":
            key = "kernel (syscalls, scheduling, network)"
        elif re.search(r"(^|_)(mi|malloc|free|int_malloc|int_free)|cfree|memmove|memcpy|memcmp|memset|realloc|"
                                  r"unlink_chunk|consolidate|__rustc::", sym):
            key = "allocator + libc memcpy/memcmp"
        else:
            key = re.sub(r"^<+", "", sym).split("::")[0].split(" ")[0]
            if key in ("core", "alloc", "std"):
                key = "rust core/alloc/std"
        groups[key] = groups.get(key, 0.0) + pct
    return [f"{v:6.1f}%  {k}" for k, v in sorted(groups.items(), key=lambda kv: -kv[1])[:16]]


def retention_drop(orders, orders_bytes):
    """Scenario T: S1's load while the hub's retention drops one day of
    T_ROWS messages (partitions.py). The retention task's first run comes
    halfway through the measured window."""
    base = [f"{PG_BIN}/psql", "-h", "127.0.0.1", "-p", PG_PORT, "-U", "postgres", "-d", DB, "-X", "-q",
            "-v", "ON_ERROR_STOP=1"]
    day, load_s = partitions.load_day(psql, base, WORK, gen.TENANT, gen.ENV, T_DAYS_AGO, T_ROWS, log)
    files = partitions.day_files(psql, PG_DATA, day)
    if not T_HOT:
        partitions.evict(files)
    day_mb, cached_mb = partitions.cached_mb(files)
    log(f"T: the day's partitions are {day_mb:,.0f} MB on disk, {cached_mb:,.0f} MB of them in the page cache")
    config = os.path.join(WORK, "edihub-pg-t.toml")
    with open(os.path.join(WORK, "edihub-pg.toml")) as f:
        text = f.read()
    with open(config, "w") as f:
        f.write(text + f"\n[retention]\ninterval_secs = {WARMUP + DURATION // 2 + 1}\nmessages_days = 90\n")
    server = Server("pg-t", config, PORT_PG, log_filter="warn,edihub_store=info,edihub_server::retention=info")
    sampler = partitions.Sampler(server)
    measured_from = time.time() + WARMUP
    try:
        s = scenario("T", server, "/api/edi-hub/receive-message", "unique", orders, 10 * 10**14,
                     body_bytes=orders_bytes)
    finally:
        samples = sampler.finish()
        server.stop()
    t = partitions.summarize(samples, partitions.drops_in_log(server.log_path), day, measured_from,
                             partitions.runs_in_log(server.log_path))
    t.update(rows=T_ROWS, load_s=load_s, partition=partitions.day_partition("messages", day),
             day_mb=day_mb, cached_mb=cached_mb)
    log(f"T: drop {t.get('drop_ms')} ms (span {t.get('span_ms')} ms, run from the drop step {t.get('run_ms')} ms), "
        f"S1 {t.get('run_per_s')}/s over the run, per second {t.get('during_per_s')} against a median of "
        f"{t.get('median_per_s')} (away from it: slowest run-long window {t.get('quiet_run_per_s')}/s, "
        f"slowest second {t.get('quiet_min_per_s')})")
    return s, t


def wait_with_checkpoints(procs, every_s=30):
    """Waits for the load's sessions, with a CHECKPOINT every `every_s`
    seconds meanwhile: the bench allows `max_wal_size=16GB` so that no
    checkpoint lands in a measured run, and a load that waited for it would
    keep up to 17 GB of WAL on disk beside its tables (a 50 M load would
    not fit the disk). A checkpoint lets PostgreSQL recycle the WAL written
    before it, even while the load's transactions are still open. Returns
    whether any session failed."""
    last = time.time()
    while any(p.poll() is None for p in procs):
        time.sleep(1)
        if time.time() - last >= every_s:
            psql("CHECKPOINT")
            last = time.time()
    return any(p.returncode for p in procs)


def s6_load(res):
    """S6's stored messages. The secondary indexes are dropped, the rows
    inserted by two sessions at once and the indexes built again: the same
    final table in a fraction of the time (a built index is also denser than
    one grown by random inserts)."""
    log(f"S6: inserting {S6_ROWS:,} messages")
    t = time.time()
    defs = psql("SELECT indexname || '|' || indexdef FROM pg_indexes WHERE tablename = 'messages' "
                "AND indexname <> 'messages_pkey'").splitlines()
    for d in defs:
        psql(f"DROP INDEX {d.split('|', 1)[0]}")
    base = [f"{PG_BIN}/psql", "-h", "127.0.0.1", "-p", PG_PORT, "-U", "postgres", "-d", DB, "-X", "-q",
            "-v", "ON_ERROR_STOP=1"]
    procs = [subprocess.Popen(base + ["-f", os.path.join(WORK, f"bulk-{i}.sql")]) for i in (1, 2)]
    if wait_with_checkpoints(procs):
        sys.exit("S6: bulk insert failed")
    res["s6_insert_s"] = time.time() - t
    # On a partitioned table pg_indexes reads `ON ONLY messages`, which would
    # build an invalid parent index and none on the partitions: build each
    # on the whole table, as the migration does.
    groups = [defs[0::2], defs[1::2]]
    procs = [subprocess.Popen(base + ["-c", "; ".join(d.split("|", 1)[1].replace(" ON ONLY ", " ON ") for d in g)])
             for g in groups if g]
    if wait_with_checkpoints(procs):
        sys.exit("S6: index build failed")
    invalid = psql("SELECT count(*) FROM pg_index WHERE NOT indisvalid").strip()
    if invalid != "0":
        sys.exit(f"S6: {invalid} invalid indexes after the build")
    res["s6_load_s"] = time.time() - t
    t = time.time()
    # The claims too: its autovacuum would otherwise start during S6's run.
    psql("VACUUM ANALYZE messages")
    psql("VACUUM ANALYZE message_claims")
    psql("CHECKPOINT")
    res["s6_vacuum_s"] = time.time() - t
    # Every new fingerprint probes and inserts into the claims' primary key
    # at a random place, so a hub that has been running keeps that index in
    # `shared_buffers` when they are large enough. The load left it cold (the index
    # builds and vacuums read 40 GB since): read it in, as a running hub has
    # it (and as the operator's autoprewarm restores it after a restart).
    t = time.time()
    psql("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    blocks = int(psql("SELECT pg_prewarm('message_claims_pkey')"))
    res["s6_prewarm_s"] = time.time() - t
    res["s6_prewarm_mb"] = blocks * 8 / 1024


# --------------------------------------------------------------------------- criterion


def criterion_results():
    base = os.path.join(ROOT, "target", "criterion", "parse_fingerprint")
    out = []
    if not os.path.isdir(base):
        return out
    for bench_id in sorted(os.listdir(base)):
        est = os.path.join(base, bench_id, "new", "estimates.json")
        meta = os.path.join(base, bench_id, "new", "benchmark.json")
        if not (os.path.exists(est) and os.path.exists(meta)):
            continue
        ns = json.load(open(est))["mean"]["point_estimate"]
        tp = json.load(open(meta)).get("throughput") or {}
        size = tp.get("Bytes") or tp.get("BytesDecimal")
        if size:
            out.append({"id": bench_id, "bytes": size, "us": ns / 1000, "mb_s": size / (ns / 1e9) / 1e6})
    return out


# --------------------------------------------------------------------------- report


def machine():
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    try:
        commit = run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).strip()
        dirty = run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"]).strip()
        if dirty:
            commit += " (with uncommitted changes)"
    except (subprocess.CalledProcessError, FileNotFoundError):
        commit = "unknown"
    pg_version = run([f"{PG_BIN}/postgres", "--version"]).strip()
    # Scenario T's drop depends on it: with online discard the filesystem
    # trims a dropped partition's extents inside its journal commit, and the
    # WAL flushes of the load wait behind it.
    try:
        fs = run(["findmnt", "-no", "FSTYPE,OPTIONS", "--target", PG_DATA]).strip().split(None, 1)
        discard = "discard" in fs[1].split(",") if len(fs) > 1 else False
        data_fs = f"{fs[0]}, {'online discard' if discard else 'no online discard'}"
    except (subprocess.CalledProcessError, FileNotFoundError, IndexError):
        data_fs = "unknown"
    return {
        "data_fs": data_fs,
        "nproc": os.cpu_count(),
        "cpu": model,
        "mem_gib": mem_kb / 1024 / 1024,
        "kernel": platform.release(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "postgres": pg_version,
        "wrk": wrk_version(),
    }


def wrk_version():
    # `wrk --version` prints its banner and exits 1.
    p = subprocess.run(["wrk", "--version"], capture_output=True, text=True)
    first = (p.stdout or p.stderr).splitlines()
    return first[0].split(" Copyright")[0].strip() if first else "wrk"


def fmt(v, nd=1):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.{nd}f}"
    return f"{v:,}"


def render(res):
    S = res["scenarios"]
    L = []
    mach = res["machine"]
    L.append(f"Machine: {mach['nproc']} cores ({mach['cpu']}), {mach['mem_gib']:.1f} GiB RAM, Linux {mach['kernel']}; "
             f"{mach['postgres']} (data on {mach.get('data_fs', 'unknown')}); {mach['wrk']}.  ")
    L.append(f"Date: {mach['date']}. Commit: `{mach['commit']}`. Total time of `make bench`: "
             f"{res.get('total_s', 0) / 60:.1f} min (release build {res.get('build_s', 0):.0f} s).  ")
    L.append(f"Load average before the first scenario: {res['idle_load']:.2f} "
             f"(waited up to 60 s for < 0.5). Each scenario: {WARMUP} s warm-up, {DURATION} s measured.")
    L.append("")
    L.append("| scenario | conns | req/s | MB/s | p50 ms | p99 ms | edihub CPU-ms/msg | PG CPU-ms/msg | "
             "wrk CPU-ms/msg | peak RSS MB | ceiling tps | ratio | responses |")
    L.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    for key, label in (("S1", "S1 ORDERS05 5 KB, PostgreSQL"), ("S2", "S2 S1 + 50 % repeats, 10 % key replays"),
                       ("S7", "S7 S1, each with its own Idempotency-Key"), ("S3", "S3 S1 on SQLite"), ("S4", "S4 webhooks 1 KB, Standard Webhooks"),
                       ("S5", "S5 INVOIC02 10 MB, 20,000 items"), ("S6", f"S6 S1 after {S6_ROWS / 1e6:g} M stored messages"),
                       ("T", "T S1 while retention drops a day")):
        s = S.get(key)
        if not s:
            continue
        ceil = S.get(key + "_ceiling")
        ratio = s["rps"] / ceil["tps"] if ceil else None
        resp = " ".join(f"{k}:{v}" for k, v in sorted(s["status"].items()))
        if 0 < s["status"].get("400", 0) <= s["connections"] and key == "S5":
            resp += " (the 400s: uploads cut off when wrk stops at the end of the run)"
        if s.get("errors"):
            resp += " wrk-errors:" + ",".join(f"{k}={v}" for k, v in s["errors"].items())
        L.append(f"| {label} | {s['connections']} | {fmt(s['rps'], 0)} | {fmt(s.get('mb_s'))} | {s['p50_ms']:.2f} | "
                 f"{s['p99_ms']:.2f} | {s['ms_per_msg_edihub']:.3f} | {s['ms_per_msg_pg']:.3f} | "
                 f"{s['ms_per_msg_loadgen']:.3f} | {s['rss_mb']:.1f} | {fmt(ceil['tps'], 0) if ceil else '–'} | "
                 f"{f'{ratio:.2f}' if ratio else '–'} | {resp} |")
    for key in ("S1_ceiling", "S6_ceiling"):
        c = S.get(key)
        if c:
            L.append(f"| {key.replace('_', ' ')}: pgbench, same INSERT | {CONNS} | {fmt(c['tps'], 0)} | – | – | – | – | "
                     f"{c['ms_per_msg_pg']:.3f} | {c['ms_per_msg_loadgen']:.3f} (pgbench) | – | – | – | "
                     f"mean latency {c['lat_mean_ms']} ms, failed {c['failed']} |")
    L.append("")
    crit = res.get("criterion") or []
    if crit:
        L.append("Core (criterion, `cargo bench -p edihub-core`, one core): parse_body + fingerprint per input byte.")
        L.append("")
        L.append("| input | bytes | µs per body | MB/s |")
        L.append("|---|--:|--:|--:|")
        for c in crit:
            L.append(f"| {c['id']} | {c['bytes']:,} | {c['us']:.1f} | {c['mb_s']:.1f} |")
        L.append("")

    if res.get("t"):
        t = res["t"]
        cache = f"{t['day_mb']:,.0f} MB of partitions, {t['cached_mb']:,.0f} MB of them in the page cache"
        L.append(f"T: retention dropped `{t['partition']}` ({t['rows']:,} messages, loaded and attached in "
                 f"{t['load_s']:.0f} s; {cache}) while S1's load ran: the drop itself (detach concurrently and drop of "
                 f"the day's messages, deliveries and attempts partitions, as the hub logs it) took "
                 f"{fmt(t.get('drop_ms'), 0)} ms of statements, spread by `retention.detach_pause_ms` over "
                 f"{fmt(t.get('span_ms'), 0)} ms from the start of the run's drop step (listing and keep checks "
                 f"included). From there to the run's end ({fmt(t.get('run_ms'), 0)} ms, the batched purges "
                 f"included) S1 accepted {fmt(t.get('run_per_s'), 0)} messages per second, and "
                 f"{t.get('during_per_s')} in the second(s) it touched, against a median second of "
                 f"{fmt(t.get('median_per_s'), 0)} (away from it, the slowest window as long: "
                 f"{fmt(t.get('quiet_run_per_s'), 0)} per second; the slowest second: "
                 f"{fmt(t.get('quiet_min_per_s'), 0)}). Messages per second "
                 f"over the measured window: {t['per_second']}.")
        L.append("")
    if S.get("F"):
        L.extend(feed.render(S["F"]))
        L.append("")
    if S.get("D"):
        L.extend(delivery.render(S["D"]))
        L.append("")
    if S.get("R1"):
        L.extend(pooled.render(S, S.get("S1")))
        L.append("")
    if res.get("packet"):
        L.extend(packet.render(res["packet"]))
        L.append("")
    if S.get("A"):
        L.extend(as2.render(S))
        L.append("")

    # CPU seconds
    L.append("### CPU seconds per run (measured window only)")
    L.append("")
    L.append("| run | wall s | edihub | PostgreSQL | load generator | everything else | steal | load avg at start |")
    L.append("|---|--:|--:|--:|--:|--:|--:|--:|")
    for key in ("S1", "S1_ceiling", "F", "R1", "R2", "S2", "S7", "S3", "S4", "S5", "D_base", "D", "A_plain", "A", "S6",
                "S6_ceiling", "T"):
        s = S.get(key)
        if s:
            L.append(f"| {key} | {s['wall']:.1f} | {s['cpu_edihub']:.1f} | {s['cpu_pg']:.1f} | {s['cpu_loadgen']:.1f} | "
                     f"{s['cpu_other']:.1f} | {s['cpu_steal']:.1f} | {s['loadavg']:.2f} |")
    L.append("")
    if res.get("s6_load_s"):
        L.append(f"S6 setup: {S6_ROWS:,} rows inserted in {res['s6_insert_s']:.0f} s (secondary indexes dropped, "
                 f"then rebuilt: {res['s6_load_s']:.0f} s in all), VACUUM ANALYZE + CHECKPOINT in "
                 f"{res['s6_vacuum_s']:.0f} s; `messages` then held {res['s6_rows']:,} rows, "
                 f"{res['s6_size']} with indexes; the claims' primary key ({res['s6_prewarm_mb']:.0f} MB) "
                 f"read into shared_buffers in {res['s6_prewarm_s']:.0f} s, as a running hub holds it.")
        L.append("")
    # The statements of the scenarios whose PostgreSQL work adds to S1's
    # insert: repeats, keys, delivery (its drain once the queue had enough
    # left to measure by) and AS2; every scenario's are in results.json.
    drain = (S.get("D") or {}).get("drain") or {}
    drained = drain if drain.get("delivered", 0) >= 1000 else None
    for key, s in [(k, S.get(k)) for k in ("S2", "S7", "D")] + [("D's drain", drained), ("A", S.get("A"))]:
        if s and s.get("top_statements"):
            L.append(f"<details><summary>pg_stat_statements, {key} (top by total time)</summary>")
            L.append("")
            L.append("| calls | total ms | mean ms | statement |")
            L.append("|--:|--:|--:|---|")
            for t in s["top_statements"]:
                q = t["query"].replace("|", "\\|")
                L.append(f"| {t['calls']:,} | {t['total_ms']:,.0f} | {t['mean_ms']:.3f} | `{q}` |")
            L.append("")
            L.append("</details>")
            L.append("")
    if res.get("profile"):
        load = "S2's" if PROFILE_MODE == "mixed" else "S1"
        L.append(f"<details><summary>perf, edihub under {load} load (self time by symbol)</summary>")
        L.append("")
        L.append("```")
        L.extend(res["profile"])
        L.append("```")
        L.append("")
        L.append("</details>")
        L.append("")
    return "\n".join(L)


def targets(res):
    """(scenario, target, measured, met) for the summary table; met is True, False
    or None (a scenario with no target, reported for its figure)."""
    S = res["scenarios"]
    s1, c1 = S.get("S1"), S.get("S1_ceiling")
    t = []

    def add(scenario, target, ok, measured):
        t.append((scenario, target, measured, ok))

    if s1 and c1:
        r = s1["rps"] / c1["tps"]
        add("S1", "≥ 0.7 × the pgbench ceiling", r >= 0.7, f"{r:.2f} ({s1['rps']:,.0f} / {c1['tps']:,.0f} req/s)")
    if s1:
        add("S1", "p99 ≤ 10 ms", s1["p99_ms"] <= 10, f"{s1['p99_ms']:.2f} ms")
        add("S1", "edihub ≤ 0.1 CPU-ms per message", s1["ms_per_msg_edihub"] <= 0.1,
            f"{s1['ms_per_msg_edihub']:.3f} ms")
        add("S1", "peak RSS ≤ 64 MB", s1["rss_mb"] <= 64, f"{s1['rss_mb']:.1f} MB")
    if s1 and S.get("S2"):
        add("S2", "req/s ≥ S1's", S["S2"]["rps"] >= s1["rps"], f"{S['S2']['rps']:,.0f} vs {s1['rps']:,.0f}")
    for key in ("S2", "S7"):
        if s1 and S.get(key):
            r = S[key]["rps"] / s1["rps"]
            add(key, "≥ 0.9 × S1", r >= 0.9, f"{r:.2f} ({S[key]['rps']:,.0f} vs {s1['rps']:,.0f})")
    if S.get("S3"):
        add("S3", "≥ 5,000 messages/s", S["S3"]["rps"] >= 5000, f"{S['S3']['rps']:,.0f}/s")
    if S.get("S4"):
        add("S4", "none", None, f"{S['S4']['rps']:,.0f} req/s")
    if S.get("S5"):
        s5 = S["S5"]
        add("S5", "≥ 100 MB/s", s5["mb_s"] >= 100, f"{s5['mb_s']:.1f} MB/s")
        lim = 3 * s5["body_bytes"] / 2**20 + 64
        add("S5", "peak RSS ≤ 3 × body + 64 MB", s5["rss_mb"] <= lim,
            f"{s5['rss_mb']:.1f} MB (limit {lim:.0f} MB)")
    if s1 and S.get("S6"):
        # 5 M stored messages (the default) against 0.8 × S1; 50 M and more against 0.9 × S1.
        r, share = S["S6"]["rps"] / s1["rps"], (0.9 if S6_ROWS >= 50_000_000 else 0.8)
        add(f"S6 ({S6_ROWS / 1e6:g} M stored)", f"≥ {share} × S1", r >= share, f"{r:.2f}")
    tr = res.get("t") or {}
    if tr.get("drop_ms") is not None:
        add("T", "the day's drop < 1 s (≥ 5 M messages)", tr["drop_ms"] < 1000 and tr["rows"] >= 5_000_000,
            f"{tr['drop_ms']:,} ms ({tr['rows']:,} messages)")
    if tr.get("dip") is not None:
        add("T", "S1's rate during the retention run ≤ 10 % below the median second", tr["dip"] <= 0.10,
            f"{max(0.0, tr['dip']) * 100:.0f} % ({tr['run_per_s']:,}/s vs {tr['median_per_s']:,}/s; "
            f"slowest second {min(tr['during_per_s']):,})")
    elif S.get("T"):
        add("T", "the day's drop < 1 s (≥ 5 M messages)", False, "no drop of the day was logged during the run")
    t.extend(feed.targets(S.get("F")))
    t.extend(delivery.targets(S.get("D")))
    if S.get("R1") and s1:
        add("R1", "none (PgBouncer, one replica)", None, f"{S['R1']['rps'] / s1['rps']:.2f} × S1")
    if S.get("R1") and S.get("R2"):
        add("R2", "none (two replicas on the same cores)", None, f"{S['R2']['rps'] / S['R1']['rps']:.2f} × R1")
    t.extend(packet.targets(res.get("packet") or {}))
    t.extend(as2.targets(S))
    crit = res.get("criterion") or []
    for kind, target, floor in (("xml", "IDoc-XML", 200), ("edifact|x12", "EDIFACT and X12", 150)):
        inputs = [c for c in crit if re.search(kind, c["id"])]
        if inputs:
            worst = min(inputs, key=lambda c: c["mb_s"])
            add("core", f"≥ {floor} MB/s parse + fingerprint, {target} (slowest input)", worst["mb_s"] >= floor,
                f"{worst['mb_s']:.1f} MB/s ({worst['id']})")
    if res.get("total_s") and set(SCENARIOS) >= set(ALL_SCENARIOS.split(",")):
        add("make bench", "the whole run ≤ 20 min", res["total_s"] <= 20 * 60, f"{res['total_s'] / 60:.1f} min")
    return t


def run_stamp(res):
    return f"`{res['machine']['commit']}`, {res['machine']['date'][:10]}"


def write_md(res, text):
    """Rewrites the summary and the results blocks of BENCHMARKS.md; the text
    around them is kept."""
    old = open(OUT, encoding="utf-8").read() if os.path.exists(OUT) else "# Benchmarks\n"
    new = summary.replace_block(old, summary.RESULTS, text, "## Latest results")
    new = summary.replace_block(new, summary.SUMMARY, summary.render(new, targets(res), run_stamp(res)), "## Summary")
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(new)


# --------------------------------------------------------------------------- main


def main():
    t_start = time.time()
    sqlite_path = os.path.join(WORK, "sqlite", "edihub.db")
    os.makedirs(os.path.dirname(sqlite_path), exist_ok=True)
    gen.main_with(WORK, PG_URL, sqlite_path, PORT_PG, PORT_SQLITE)
    orders = os.path.join(WORK, "orders05.tmpl")
    invoic = os.path.join(WORK, "invoic02.tmpl")
    hook = os.path.join(WORK, "webhook.tmpl")
    orders_bytes = os.path.getsize(orders)
    invoic_bytes = os.path.getsize(invoic)

    psql(f"CREATE DATABASE {DB}", db="postgres")
    psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    res = {"machine": machine(), "scenarios": {}, "criterion": criterion_results(),
           "settings": {"duration": DURATION, "warmup": WARMUP, "connections": CONNS, "threads": THREADS,
                        "pg_settings": PG_SETTINGS}}
    for k in ("BENCH_BUILD_S", "BENCH_T0"):
        if E.get(k):
            res[k.lower()] = float(E[k])
    res["idle_load"] = wait_idle()
    S = res["scenarios"]
    recv = "/api/edi-hub/receive-message"
    pg = sqlite = None
    try:
        if any(s in SCENARIOS for s in ("S1", "F", "S2", "S4", "S5", "D", "A", "S6", "T", "P")):
            pg = Server("pg", os.path.join(WORK, "edihub-pg.toml"), PORT_PG)
            # A database that has run for months: a partition per day behind today
            # (BENCH_PARTITION_DAYS=0 keeps a new database's layout).
            if PARTITION_DAYS > 0:
                psql(partitions.relayout_sql(PARTITION_DAYS))
            # An experiment's schema change (an index whose ingest cost is in
            # question, say), once the hub has migrated, before any scenario.
            if E.get("BENCH_PG_EXTRA_SQL"):
                log(f"applying BENCH_PG_EXTRA_SQL: {E['BENCH_PG_EXTRA_SQL']}")
                psql(E["BENCH_PG_EXTRA_SQL"])
        if "S1" in SCENARIOS:
            S["S1"] = scenario("S1", pg, recv, "unique", orders, 1 * 10**14, body_bytes=orders_bytes)
            S["S1_ceiling"] = ceiling("S1_ceiling")
        if "F" in SCENARIOS:
            # The feed of what the scenarios before it stored (S1's messages).
            S["F"] = feed.run(sys.modules[__name__], pg, DURATION)
        if "R" in SCENARIOS:
            S.update(pooled.run(sys.modules[__name__], orders, orders_bytes))
        if "S2" in SCENARIOS:
            S["S2"] = scenario("S2", pg, recv, "mixed", orders, 2 * 10**14, body_bytes=orders_bytes)
        if "S7" in SCENARIOS:
            S["S7"] = scenario("S7", pg, recv, "keyed", orders, 7 * 10**14, body_bytes=orders_bytes)
        if "S4" in SCENARIOS:
            S["S4"] = scenario("S4", pg, "/api/webhook/bench-hooks", "webhook", hook, 4 * 10**14,
                               body_bytes=os.path.getsize(hook))
        if "S5" in SCENARIOS:
            S["S5"] = scenario("S5", pg, recv, "unique", invoic, 5 * 10**14, conns=4, threads=2,
                               body_bytes=invoic_bytes)
        if "D" in SCENARIOS:
            docbases = {"D": 8 * 10**14, "D_base": 9 * 10**14}

            def d_load(name):
                S[name] = scenario(name, pg, recv, "unique", orders, docbases[name], body_bytes=orders_bytes)
                return S[name]

            S["D"] = delivery.run(pg, S.get("S1"), d_load, EDIHUB, WORK, gen.TENANT, gen.ENV, gen.ADMIN_TOKEN,
                                  cpu_of, {"cpu": pg_cpu, "reset": stats_reset, "statements": top_statements},
                                  log, drain_profile(pg))
        if "P" in SCENARIOS and pg:
            res.setdefault("packet", {})["PostgreSQL"] = packet.run("PostgreSQL", PORT_PG, AUTH, SMALL, RUN_TAG, log)
        if PROFILE and pg:
            res["profile"] = profile(pg, orders)
        if "A" in SCENARIOS:
            # Its own hub on the same database: the configuration adds an
            # AS2 station and partner (scripts/bench/as2.py).
            if pg:
                pg.stop()
                pg = None
            S.update(as2.run(sys.modules[__name__], os.path.join(WORK, "edihub-pg.toml"), gen.TENANT, gen.ENV))
        if "S3" in SCENARIOS or "P" in SCENARIOS:
            if pg:
                pg.stop()
            sqlite = Server("sqlite", os.path.join(WORK, "edihub-sqlite.toml"), PORT_SQLITE)
            if "S3" in SCENARIOS:
                S["S3"] = scenario("S3", sqlite, recv, "unique", orders, 3 * 10**14, body_bytes=orders_bytes)
            if "P" in SCENARIOS:
                res.setdefault("packet", {})["SQLite"] = packet.run("SQLite", PORT_SQLITE, AUTH, SMALL, RUN_TAG, log)
            sqlite.stop()
            sqlite = None
        if "S6" in SCENARIOS:
            # The hub is stopped while the load runs: its retention task
            # would scan the partitions while their secondary indexes are
            # dropped (at 50 M, one purge statement read 190 MB/s for minutes).
            if pg:
                pg.stop()
                pg = None
            s6_load(res)
            res["s6_rows"] = int(psql("SELECT count(*) FROM messages"))
            res["s6_size"] = psql("SELECT pg_size_pretty(sum(pg_total_relation_size(inhrelid))) FROM pg_inherits "
                                 "WHERE inhparent = 'messages'::regclass")
            log(f"S6: loaded in {res['s6_load_s']:.0f} s, vacuumed in {res['s6_vacuum_s']:.0f} s, "
                f"{res['s6_rows']:,} rows, {res['s6_size']}")
            log(f"S6: claims primary key read into shared_buffers ({res['s6_prewarm_mb']:.0f} MB) "
                f"in {res['s6_prewarm_s']:.0f} s")
            wait_idle()
            if pg is None or pg.proc.poll() is not None:
                pg = Server("pg", os.path.join(WORK, "edihub-pg.toml"), PORT_PG)
            S["S6"] = scenario("S6", pg, recv, "unique", orders, 6 * 10**14, body_bytes=orders_bytes)
            if S6_CEILING:
                S["S6_ceiling"] = ceiling("S6_ceiling")
        if "T" in SCENARIOS:
            if pg:
                pg.stop()
                pg = None
            S["T"], res["t"] = retention_drop(orders, orders_bytes)
    finally:
        for s in (pg, sqlite):
            if s:
                s.stop()
    t0 = float(E.get("BENCH_T0", t_start))
    res["total_s"] = time.time() - t0
    res["build_s"] = float(E.get("BENCH_BUILD_S", 0))
    os.makedirs(os.path.join(ROOT, "target", "bench"), exist_ok=True)
    with open(os.path.join(ROOT, "target", "bench", "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    text = render(res)
    print(text)
    print(summary.render("", targets(res), run_stamp(res)))
    if E.get("BENCH_WRITE", "1") == "1":
        write_md(res, text)
        log(f"results written to {OUT} (raw numbers in target/bench/results.json)")


if __name__ == "__main__":
    main()
