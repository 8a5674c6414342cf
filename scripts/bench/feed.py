"""Scenario F: the pull feed, the zero-push alternative to delivery
(docs/delivery.md, "Pull feed"): one consumer reads the environment's feed
from its first message, a page of `limit=500` after another on one
keep-alive connection, with the consumer key, until a page comes back empty
or the run's duration is up. It runs after S1, so it reads S1's messages
(5 KB ORDERS05 IDocs, each rendered into its envelope on the way out).

Reported: messages read per second, the envelopes' MB/s, and the CPU-ms per
message read of edihub, PostgreSQL and the consumer (parsing each page's
JSON, as a real client would).
"""

import http.client
import json
import resource
import time

from gen import CONSUMER_KEY

PAGE = 500


def _page(conn, after):
    path = f"/api/edi-hub/messages?limit={PAGE}" + (f"&after={after}" if after else "")
    conn.request("GET", path, headers={"Authorization": "Bearer " + CONSUMER_KEY})
    res = conn.getresponse()
    body = res.read()
    if res.status != 200:
        raise RuntimeError(f"feed answered {res.status}: {body[:300]!r}")
    page = json.loads(body)
    return len(page["messages"]), page.get("next_cursor"), len(body)


def run(bench, server, duration):
    """Reads the feed of `server`'s bench environment for up to `duration`
    seconds; the measured window starts at the first page."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    window = bench.Window(server)
    client0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.time()
    read = pages = body_bytes = 0
    after = None
    caught_up = False
    while time.time() - t0 < duration:
        n, after, size = _page(conn, after)
        pages += 1
        read += n
        body_bytes += size
        if n == 0:
            caught_up = True
            break
    wall = time.time() - t0
    client1 = resource.getrusage(resource.RUSAGE_SELF)
    client = (client1.ru_utime - client0.ru_utime) + (client1.ru_stime - client0.ru_stime)
    out = window.close(client)
    conn.close()
    per = max(read, 1)
    out.update({
        "read": read,
        "pages": pages,
        "caught_up": caught_up,
        "read_wall": wall,
        "per_s": read / wall if wall else 0.0,
        "mb_s": body_bytes / wall / 2**20 if wall else 0.0,
        "ms_per_msg_edihub": out["cpu_edihub"] * 1000 / per,
        "ms_per_msg_pg": out["cpu_pg"] * 1000 / per,
        "ms_per_msg_client": client * 1000 / per,
    })
    bench.log(f"F: {read:,} messages in {pages:,} pages, {wall:.1f} s, {out['per_s']:,.0f}/s")
    return out


def render(f):
    """The scenario's lines under "Latest results"."""
    how = "read everything stored, then an empty page" if f["caught_up"] else "stopped at the run's duration"
    return [
        f"Scenario F: one consumer of the pull feed, pages of {PAGE} envelopes on one keep-alive connection, "
        f"from the feed's start ({how}).",
        "",
        "| messages read | pages | seconds | messages/s | MB/s | edihub CPU-ms/msg | PG CPU-ms/msg | "
        "consumer CPU-ms/msg |",
        "|--:|--:|--:|--:|--:|--:|--:|--:|",
        f"| {f['read']:,} | {f['pages']:,} | {f['read_wall']:.1f} | {f['per_s']:,.0f} | {f['mb_s']:.1f} | "
        f"{f['ms_per_msg_edihub']:.3f} | {f['ms_per_msg_pg']:.3f} | {f['ms_per_msg_client']:.3f} |",
    ]


def targets(f):
    """(scenario, target, measured, met): a figure, no target."""
    if not f:
        return []
    measured = (f"{f['per_s']:,.0f} messages/s ({f['mb_s']:.1f} MB/s; edihub {f['ms_per_msg_edihub']:.3f}, "
                f"PostgreSQL {f['ms_per_msg_pg']:.3f} CPU-ms/msg)")
    return [("feed", "none (messages/s read by one consumer of the pull feed)", measured, None)]
