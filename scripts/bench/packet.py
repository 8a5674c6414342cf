"""Scenario P: one large IDoc packet, sent new and then re-sent, while a small
sender keeps posting single IDocs (one client must not hold up the others).

SAP sends packets of thousands of IDocs and re-sends a whole packet when it
loses the answer. The scenario measures, on one hub:

- the packet (PACKET_IDOCS minimal ORDERS05 IDocs, about 4.5 MB for 20,000)
  sent once: status and seconds;
- the same packet re-sent: status and seconds (the target: re-send <= new);
- a small sender posting one unique ORDERS05 at a time on its own connection
  during each send: how many it sent, its p50/p99/max latency and any
  non-2xx answer.
"""

import http.client
import threading
import time

PACKET_IDOCS = 20_000


def packet_body(tag, n=PACKET_IDOCS):
    idocs = "".join(
        f'<IDOC BEGIN="1"><EDI_DC40 SEGMENT="1"><IDOCTYP>ORDERS05</IDOCTYP><MESTYP>ORDERS</MESTYP>'
        f"<DOCNUM>{8_000_000 + i}</DOCNUM><SNDPRN>BENCHPKT</SNDPRN></EDI_DC40>"
        f'<E1EDK01 SEGMENT="1"><BELNR>{tag}-{i}</BELNR></E1EDK01></IDOC>'
        for i in range(n)
    )
    return f"<ORDERS05>{idocs}</ORDERS05>".encode()


def post(port, body, auth, timeout=120):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", "/api/edi-hub/receive-message", body=body,
                     headers={"Content-Type": "application/xml", "Authorization": auth})
        r = conn.getresponse()
        r.read()
        return r.status
    finally:
        conn.close()


class SmallSender(threading.Thread):
    """Posts single small IDocs back to back until stopped."""

    def __init__(self, port, auth, template, tag):
        super().__init__(daemon=True)
        self.port, self.auth, self.template, self.tag = port, auth, template, tag
        self.latencies, self.errors, self.stop = [], {}, threading.Event()

    def run(self):
        i = 0
        while not self.stop.is_set():
            body = self.template.replace(b"4500012345", f"{self.tag}-{i}".encode())
            t0 = time.perf_counter()
            try:
                status = post(self.port, body, self.auth, timeout=60)
            except OSError as e:
                status = type(e).__name__
            self.latencies.append((time.perf_counter() - t0) * 1000)
            if not (isinstance(status, int) and 200 <= status < 300):
                self.errors[str(status)] = self.errors.get(str(status), 0) + 1
            i += 1

    def summary(self):
        lat = sorted(self.latencies) or [0.0]

        def pct(p):
            return lat[min(len(lat) - 1, int(p * len(lat)))]

        return {"sent": len(self.latencies), "p50_ms": pct(0.50), "p99_ms": pct(0.99), "max_ms": lat[-1],
                "errors": self.errors}


def send_with_small_sender(port, auth, body, small_template, tag):
    small = SmallSender(port, auth, small_template, tag)
    small.start()
    time.sleep(0.5)  # the small sender's steady state before the packet
    t0 = time.perf_counter()
    status = post(port, body, auth)
    secs = time.perf_counter() - t0
    small.stop.set()
    small.join()
    return {"status": status, "secs": secs, "small": small.summary()}


def run(name, port, auth, small_template, run_tag, log):
    """Scenario P on the hub at `port`: the packet new, then re-sent."""
    body = packet_body(f"{run_tag}{name}")
    log(f"P ({name}): a {PACKET_IDOCS:,}-IDoc packet of {len(body) / 1e6:.1f} MB, new then re-sent")
    new = send_with_small_sender(port, auth, body, small_template, f"{run_tag}{name}pn")
    again = send_with_small_sender(port, auth, body, small_template, f"{run_tag}{name}pr")
    for label, r in (("new", new), ("re-sent", again)):
        s = r["small"]
        log(f"P ({name}) {label}: {r['status']} in {r['secs']:.2f} s; small sender {s['sent']} sent, "
            f"p50 {s['p50_ms']:.1f} ms, p99 {s['p99_ms']:.1f} ms, max {s['max_ms']:.1f} ms, errors {s['errors']}")
    return {"idocs": PACKET_IDOCS, "bytes": len(body), "new": new, "resent": again}


def render(results):
    """The table rows of scenario P, one per backend and send."""
    lines = ["", f"Scenario P: one {PACKET_IDOCS:,}-IDoc packet sent new, then re-sent (SAP's retry), while a "
             "small sender posts single ORDERS05 IDocs one at a time on its own connection.", "",
             "| backend | send | status | seconds | small sender: sent | p50 ms | p99 ms | max ms | non-2xx |",
             "|---|---|--:|--:|--:|--:|--:|--:|---|"]
    for name, r in results.items():
        for label, key in (("new", "new"), ("re-sent", "resent")):
            x, s = r[key], r[key]["small"]
            errors = " ".join(f"{k}:{v}" for k, v in s["errors"].items()) or "none"
            lines.append(f"| {name} | {label} | {x['status']} | {x['secs']:.2f} | {s['sent']} | {s['p50_ms']:.1f} | "
                         f"{s['p99_ms']:.1f} | {s['max_ms']:.1f} | {errors} |")
    return lines


def targets(results):
    """(scenario, target, measured, met) per backend: the re-send no slower than the first send."""
    out = []
    for name, r in results.items():
        new, again = r["new"], r["resent"]
        ok = again["status"] == 200 and new["status"] == 202 and again["secs"] <= new["secs"]
        out.append((f"P ({name})", "re-send answered 200 in no more time than the new send",
                    f"{again['status']} in {again['secs']:.2f} s vs {new['status']} in {new['secs']:.2f} s", ok))
    return out
