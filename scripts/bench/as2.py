#!/usr/bin/env python3
"""Scenario A: AS2 against the plain endpoint, the same 100 KB X12
interchange, on one hub in one run.

A trading partner posts each interchange to `POST /as2` signed (SHA-256)
and encrypted (AES-256-CBC, RSA-2048 keys on both sides), asking for a
signed MDN in the answer; the plain sender posts the same interchange to
`/api/edi-hub/receive-message` with its key. Every message is new: its own
AS2 Message-ID, its own ISA13/GS06 control numbers and its own BEG03
purchase order number, so no dedup layer answers from a stored result.

The AS2 bodies are made before the run with the `openssl cms` command (the
way docs/as2.md builds one: the payload as a MIME entity, signed into
`multipart/signed`, encrypted to the station's certificate), so the sender
only posts. One sender process (`as2.py send`, threads over keep-alive
connections) posts a fixed count of messages on each path, a warm-up
first; an answer counts when it is a 202 (plain) or a 200 whose MDN says
`processed` (AS2). Measured per path: messages per second, latency, and the
CPU per message of edihub, PostgreSQL and the sender; reported: the AS2
rate against the plain one (the target: at least 0.5).

    as2.py send MANIFEST URL CONNECTIONS     (the sender; prints BENCH_RESULT {json})
"""

import base64
import concurrent.futures
import http.client
import itertools
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse

STATION, PARTNER = "EDIHUB-BENCH", "BENCH-PARTNER"
TARGET_BYTES = 100_000
# The MDN asked for: signed, SHA-256 (RFC 4130 §7.3).
MDN_OPTIONS = "signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, sha-256"
PROCESSED = re.compile(rb"Disposition:[^\r\n]*;\s*processed\s*\r?\n")


def interchange(number):
    """A ~100 KB X12 850 interchange, new by its ISA13/GS06 `number` and its BEG03."""
    isa = (f"ISA*00*          *00*          *ZZ*BENCHPARTNER   *ZZ*EDIHUBBENCH    *240101*1200*U*00401*"
           f"{number:09d}*0*P*>~\n")
    head = [f"GS*PO*BENCHPARTNER*EDIHUBBENCH*20240101*1200*{number}*X*004010~\n", "ST*850*0001~\n",
            f"BEG*00*SA*PO-{number}**20240101~\n", "REF*DP*042~\n"]
    tail_len = len(f"CTT*9999~\nSE*99999*0001~\nGE*1*{number}~\nIEA*1*{number:09d}~\n")
    items, size, i = [], len(isa) + sum(len(s) for s in head) + tail_len, 0
    while size < TARGET_BYTES:
        i += 1
        seg = (f"PO1*{i:05d}*{i % 40 + 1}*EA*{i % 90 + 9}.95**BP*ITEM-{i:06d}*VP*VEND-{i:06d}~\n"
               f"PID*F****Bench article {i:06d}, steel screw M{i % 12 + 3} with nut, box of {i % 50 + 10}~\n")
        items.append(seg)
        size += len(seg)
    segments = 2 + 1 + 2 * i + 2  # ST, BEG, REF, the items' PO1 and PID, CTT, SE
    tail = f"CTT*{i}~\nSE*{segments}*0001~\nGE*1*{number}~\nIEA*1*{number:09d}~\n"
    return (isa + "".join(head) + "".join(items) + tail).encode()


def keys(work):
    """The station's and the partner's RSA-2048 keys with self-signed certificates."""
    d = os.path.join(work, "as2")
    os.makedirs(d, exist_ok=True)
    for who in ("station", "partner"):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-sha256", "-days", "30", "-nodes",
                        "-subj", f"/CN={who}.bench.example", "-keyout", os.path.join(d, f"{who}.key"),
                        "-out", os.path.join(d, f"{who}.crt")], check=True, capture_output=True)
    return d


def config(base_config, keydir, tenant, env):
    """The bench's PostgreSQL configuration with X12.850 keyed by BEG03, a
    station of the bench environment and a partner that signs, encrypts and
    asks for signed synchronous MDNs."""
    with open(base_config) as f:
        text = f.read()
    path = base_config.replace(".toml", "-as2.toml")
    with open(path, "w") as f:
        f.write(text + f"""
[[message_types]]
id = "X12.850"
duplicate_key_fields = ["BEG03"]
duplicate_window_hours = 720

[[as2.stations]]
as2_id = "{STATION}"
tenant = "{tenant}"
environment = "{env}"
key = {{ file = "{keydir}/station.key" }}
certificate = {{ file = "{keydir}/station.crt" }}

[[as2.partners]]
as2_id = "{PARTNER}"
station = "{STATION}"
certificate = {{ file = "{keydir}/partner.crt" }}
signed = true
encrypted = true
compressed = false
mic_algorithm = "sha-256"
encryption_algorithm = "aes-256-cbc"
mdn = "sync"
mdn_signed = true
""")
    return path


def openssl(args, data):
    return subprocess.run(["openssl", "cms", *args], input=data, check=True, capture_output=True).stdout


def as2_body(payload, keydir):
    """What a partner posts: the payload as a MIME entity, signed into
    multipart/signed, encrypted to the station (docs/as2.md's steps)."""
    entity = b"Content-Type: application/edi-x12\r\n\r\n" + payload
    sig = openssl(["-sign", "-binary", "-md", "sha256", "-outform", "DER", "-signer",
                   os.path.join(keydir, "partner.crt"), "-inkey", os.path.join(keydir, "partner.key")], entity)
    b64 = base64.encodebytes(sig).replace(b"\n", b"\r\n")
    signed = (b'Content-Type: multipart/signed; protocol="application/pkcs7-signature"; micalg=sha-256; '
              b'boundary="sig1"\r\n\r\n--sig1\r\n' + entity + b"\r\n--sig1\r\nContent-Type: "
              b"application/pkcs7-signature; name=smime.p7s\r\nContent-Transfer-Encoding: base64\r\n\r\n"
              + b64 + b"\r\n--sig1--\r\n")
    return openssl(["-encrypt", "-binary", "-aes-256-cbc", "-outform", "DER",
                    os.path.join(keydir, "station.crt")], signed)


def prepare(work, keydir, name, numbers, as2, run_tag, auth):
    """Writes one body per control number into WORK/as2/NAME/ and a manifest
    (the file and the request headers of each); returns the manifest's path."""
    d = os.path.join(work, "as2", name)
    os.makedirs(d, exist_ok=True)

    def one(n):
        path = os.path.join(d, f"{n}.body")
        payload = interchange(n)
        body = as2_body(payload, keydir) if as2 else payload
        with open(path, "wb") as f:
            f.write(body)
        if as2:
            headers = {"AS2-Version": "1.2", "AS2-From": PARTNER, "AS2-To": STATION,
                       "Message-ID": f"<{run_tag}-{name}-{n}@bench-partner.example>",
                       "Content-Type": "application/pkcs7-mime; smime-type=enveloped-data; name=smime.p7m",
                       "Disposition-Notification-To": "edi@bench-partner.example",
                       "Disposition-Notification-Options": MDN_OPTIONS}
        else:
            headers = {"Content-Type": "application/EDI-X12", "Authorization": auth}
        return {"file": path, "headers": headers}

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        entries = list(pool.map(one, numbers))
    manifest = os.path.join(d, "manifest.json")
    with open(manifest, "w") as f:
        json.dump(entries, f)
    return manifest


# --------------------------------------------------------------------------- the sender


def send(manifest, url, connections):
    """Posts every entry of `manifest` to `url` over `connections` keep-alive
    connections; returns counts, the wall time and the latencies."""
    entries = json.load(open(manifest))
    u = urllib.parse.urlsplit(url)
    next_index = itertools.count()
    lock = threading.Lock()
    latencies, statuses, unconfirmed = [], {}, []

    def worker():
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
        while True:
            i = next(next_index)
            if i >= len(entries):
                break
            e = entries[i]
            with open(e["file"], "rb") as f:
                body = f.read()
            headers = e["headers"]
            t0 = time.perf_counter()
            try:
                conn.request("POST", u.path, body=body, headers=headers)
                r = conn.getresponse()
                answer = r.read()
                status = str(r.status)
            except (OSError, http.client.HTTPException) as err:
                conn.close()
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
                answer, status = b"", type(err).__name__
            ms = (time.perf_counter() - t0) * 1000
            as2 = "AS2-From" in headers
            ok = (status == "200" and PROCESSED.search(answer)) if as2 else status == "202"
            with lock:
                latencies.append(ms)
                statuses[status] = statuses.get(status, 0) + 1
                if not ok and len(unconfirmed) < 3:
                    unconfirmed.append(answer[:300].decode("latin-1"))
        conn.close()

    threads = [threading.Thread(target=worker) for _ in range(connections)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.perf_counter() - t0
    lat = sorted(latencies) or [0.0]

    def pct(p):
        return lat[min(len(lat) - 1, int(p * len(lat)))]

    return {"requests": len(latencies), "secs": secs, "statuses": statuses, "unconfirmed": unconfirmed,
            "p50_ms": pct(0.50), "p99_ms": pct(0.99), "max_ms": lat[-1]}


# --------------------------------------------------------------------------- the scenario


def run(b, base_config, tenant, env):
    """Scenario A with the bench module `b` (bench.py: Server, Window,
    timed, cpu_of, log, …): keys, configuration, bodies, then the warm-up
    and the measured sends of each path on one hub."""
    count = int(os.environ.get("BENCH_AS2_MESSAGES", "5000"))
    warmup = int(os.environ.get("BENCH_AS2_WARMUP", "100"))
    conns = int(os.environ.get("BENCH_AS2_CONNECTIONS", "8"))
    keydir = keys(b.WORK)
    cfg = config(base_config, keydir, tenant, env)
    t = time.time()
    # Control numbers: one range per path and phase, so nothing repeats.
    plans = {"plain_w": (100_000_000, warmup, False), "as2_w": (200_000_000, warmup, True),
             "plain": (300_000_000, count, False), "as2": (400_000_000, count, True)}
    manifests = {k: prepare(b.WORK, keydir, k, range(base, base + n), as2, b.RUN_TAG, b.AUTH)
                 for k, (base, n, as2) in plans.items()}
    size = len(interchange(300_000_000))
    as2_size = os.path.getsize(os.path.join(b.WORK, "as2", "as2", "400000000.body"))
    b.log(f"A: {2 * (count + warmup)} bodies made in {time.time() - t:.0f} s "
          f"(interchange {size:,} bytes, as AS2 {as2_size:,} bytes)")
    server = b.Server("pg-as2", cfg, b.PORT_PG)
    out = {}
    try:
        for key, path in (("plain", "/api/edi-hub/receive-message"), ("as2", "/as2")):
            url = server.base + path
            b.reset_hwm(server.pid)
            if warmup:
                sender(b, manifests[key + "_w"], url, conns, f"A-{key}-w")
            b.stats_reset()
            w = b.Window(server)
            r, cpu = sender(b, manifests[key], url, conns, f"A-{key}")
            res = w.close(cpu)
            n = max(1, r["requests"])
            res.update(name=f"A_{key}" if key == "plain" else "A", requests=r["requests"],
                       rps=r["requests"] / r["secs"], p50_ms=r["p50_ms"], p99_ms=r["p99_ms"], max_ms=r["max_ms"],
                       statuses=r["statuses"], unconfirmed=r["unconfirmed"], rss_mb=b.vm_hwm_mb(server.pid),
                       connections=conns, body_bytes=as2_size if key == "as2" else size,
                       ms_per_msg_edihub=res["cpu_edihub"] * 1000 / n, ms_per_msg_pg=res["cpu_pg"] * 1000 / n,
                       ms_per_msg_loadgen=res["cpu_loadgen"] * 1000 / n)
            res["top_statements"] = b.top_statements()
            b.log(f"A ({key}): {res['rps']:.1f} messages/s, p50 {res['p50_ms']:.1f} ms, p99 {res['p99_ms']:.1f} ms, "
                  f"edihub {res['ms_per_msg_edihub']:.3f} CPU-ms/msg, PG {res['ms_per_msg_pg']:.3f}, "
                  f"sender {res['ms_per_msg_loadgen']:.3f}, statuses {r['statuses']}")
            if r["unconfirmed"]:
                b.log(f"A ({key}): WARNING answers that do not confirm, e.g. {r['unconfirmed'][0]!r}")
            out["A_plain" if key == "plain" else "A"] = res
    finally:
        server.stop()
    out["A"]["plain_interchange_bytes"] = size
    return out


def sender(b, manifest, url, conns, tag):
    """Runs the sender process on `manifest`; its result and its CPU seconds."""
    cmd = [sys.executable, os.path.abspath(__file__), "send", manifest, url, str(conns)]
    code, cpu, text = b.timed(cmd, os.path.join(b.WORK, f"sender-{tag}.out"))
    m = re.search(r"^BENCH_RESULT (\{.*\})$", text, re.M)
    if code != 0 or not m:
        sys.exit(f"A: the sender failed ({code}):\n{text[-3000:]}")
    return json.loads(m.group(1)), cpu


def render(S):
    """Scenario A's table: each path's row and the ratio."""
    a, p = S.get("A"), S.get("A_plain")
    if not (a and p):
        return []
    lines = [f"Scenario A: the same {a['plain_interchange_bytes'] / 1000:.0f} KB X12 850 interchange over AS2 "
             f"(signed SHA-256 and encrypted AES-256-CBC, RSA-2048, signed sync MDN; {a['body_bytes'] / 1000:.0f} KB "
             f"as posted) and over the plain endpoint; {a['requests']:,} new messages each, "
             f"{a['connections']} connections.", "",
             "| path | messages | messages/s | p50 ms | p99 ms | edihub CPU-ms/msg | PG CPU-ms/msg | "
             "sender CPU-ms/msg | peak RSS MB | answers |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|"]
    for label, s in (("plain `/api/edi-hub/receive-message`", p), ("AS2 `/as2`", a)):
        answers = " ".join(f"{k}:{v}" for k, v in sorted(s["statuses"].items()))
        if s["unconfirmed"]:
            answers += " (some not confirmed)"
        lines.append(f"| {label} | {s['requests']:,} | {s['rps']:,.1f} | {s['p50_ms']:.1f} | {s['p99_ms']:.1f} | "
                     f"{s['ms_per_msg_edihub']:.3f} | {s['ms_per_msg_pg']:.3f} | {s['ms_per_msg_loadgen']:.3f} | "
                     f"{s['rss_mb']:.1f} | {answers} |")
    lines += ["", f"AS2 against plain: {a['rps'] / p['rps']:.2f} ×."]
    return lines


def targets(S):
    """(scenario, target, measured, met): AS2 at least half the plain rate."""
    a, p = S.get("A"), S.get("A_plain")
    if not (a and p):
        return []
    r = a["rps"] / p["rps"]
    return [("A", "AS2 ≥ 0.5 × plain, 100 KB X12", f"{r:.2f} ({a['rps']:,.0f} vs {p['rps']:,.0f} messages/s; "
             f"edihub {a['ms_per_msg_edihub']:.2f} vs {p['ms_per_msg_edihub']:.2f} CPU-ms/msg)", r >= 0.5)]


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "send":
    result = send(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    print("BENCH_RESULT " + json.dumps(result))
