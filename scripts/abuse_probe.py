"""Abuse probe on loopback (RELIABILITY.md, "Abuse"): runs one edihub binary on a
throwaway SQLite config and measures what unauthenticated or abusive clients do
to others: a webhook refused from its headers, a large upload while webhook
bodies trickle, a flood of bad signatures (audit rows), 4,150 idle connections
from one address (/healthz from another), and the admin HTTP hardening.

    python3 scripts/abuse_probe.py target/debug/edihub after

The second argument names the run (files go to /tmp/abuse/<name>).
"""
import hashlib, os, socket, sqlite3, subprocess, sys, threading, time

BIN, TAG = sys.argv[1], sys.argv[2]
DIR = f"/tmp/abuse/{TAG}"
os.makedirs(DIR, exist_ok=True)
for f in os.listdir(DIR):
    os.remove(os.path.join(DIR, f))
PORT = 18000 + (0 if TAG == "before" else 1)
sha = lambda s: hashlib.sha256(s.encode()).hexdigest()
CONF = f"""
listen = "127.0.0.1:{PORT}"
database_url = "sqlite://{DIR}/hub.db"
request_timeout_secs = 10
[admin]
token_sha256 = "{sha('admin-token')}"
[[tenants]]
id = "acme"
  [[tenants.environments]]
  id = "prod"
  api_keys_sha256 = ["{sha('acme-key')}"]
[[message_types]]
id = "ORDERS05"
duplicate_key_fields = ["E1EDK01.BELNR"]
[[message_types]]
id = "gubee.item"
duplicate_key_fields = ["$.itemId"]
[[integrations]]
id = "gubee"
tenant = "acme"
environment = "prod"
message_type = "gubee.item"
signature = {{ scheme = "hmac", secret_env = "GUBEE_SECRET", header = "X-Gubee-Signature", encoding = "hex", prefix = "sha256=" }}
"""
open(f"{DIR}/edihub.toml", "w").write(CONF)

def start():
    env = dict(os.environ, EDIHUB_CONFIG=f"{DIR}/edihub.toml", GUBEE_SECRET="s3cret", EDIHUB_LOG="warn")
    p = subprocess.Popen([BIN, "serve"], env=env, stdout=open(f"{DIR}/log", "a"), stderr=subprocess.STDOUT)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
            return p
        except OSError:
            time.sleep(0.1)
    sys.exit("hub did not start")

def conn(src="127.0.0.1"):
    s = socket.socket()
    s.bind((src, 0))
    s.connect(("127.0.0.1", PORT))
    return s

def head(method, path, headers):
    h = "".join(f"{k}: {v}\r\n" for k, v in headers)
    return f"{method} {path} HTTP/1.1\r\nHost: hub\r\nConnection: close\r\n{h}\r\n".encode()

def answer(s, limit=60):
    s.settimeout(limit)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except OSError:
        pass
    return out.decode("latin-1")

def request(method, path, headers, body=b"", src="127.0.0.1"):
    t = time.time()
    s = conn(src)
    s.sendall(head(method, path, headers + [("Content-Length", str(len(body)))]))
    try:
        s.sendall(body)
    except OSError:
        pass
    a = answer(s)
    s.close()
    return a, time.time() - t

status = lambda a: a.split(" ")[1] if a.startswith("HTTP/") else "none"

def idoc(size, belnr):
    pad = "x" * max(0, size - 400)
    return (f'<?xml version="1.0"?><ORDERS05><IDOC BEGIN="1"><EDI_DC40 SEGMENT="1"><DOCNUM>{belnr}</DOCNUM>'
            f'<MESTYP>ORDERS</MESTYP></EDI_DC40><E1EDK01 SEGMENT="1"><BELNR>{belnr}</BELNR></E1EDK01>'
            f'<!--{pad}--></IDOC></ORDERS05>').encode()

hub = start()
try:
    # Item 2a: a webhook without a signature header, headers only (1 MB declared, no body).
    t = time.time(); s = conn()
    s.sendall(head("POST", "/api/webhook/gubee", [("Content-Type", "application/json"), ("Content-Length", "1000000")]))
    a = answer(s, 30); s.close()
    print(f"[{TAG}] item2 missing-signature webhook, headers only: {status(a)} after {time.time()-t:.2f} s")

    # Item 2b: 3 connections trickle 12 MB webhook bodies (well-formed signature) at 1 byte/s; then a 2 MB IDoc.
    tricklers = []
    for i in range(3):
        s = conn()
        s.sendall(head("POST", "/api/webhook/gubee", [("X-Gubee-Signature", "sha256=" + "0" * 64),
                       ("Content-Type", "application/json"), ("Content-Length", str(12_000_000))]))
        tricklers.append(s)
    stop = threading.Event()
    def trickle():
        while not stop.is_set():
            for s in tricklers:
                try: s.send(b" ")
                except OSError: pass
            time.sleep(1)
    threading.Thread(target=trickle, daemon=True).start()
    time.sleep(0.5)
    a, took = request("POST", "/api/edi-hub/receive-message",
                      [("Authorization", "Bearer acme-key"), ("Content-Type", "application/xml")], idoc(2_000_000, "4711000001"))
    print(f"[{TAG}] item2 2 MB IDoc while 3 webhook bodies trickle at 1 B/s: {status(a)} after {took:.2f} s")
    stop.set()
    for s in tricklers: s.close()

    # Item 3: 2,000 bad-signature webhooks.
    body = b'{"itemId":"I-1"}'
    t = time.time()
    for i in range(2000):
        request("POST", "/api/webhook/gubee", [("X-Gubee-Signature", "sha256=" + "0" * 64), ("Content-Type", "application/json")], body)
    print(f"[{TAG}] item3 2000 bad signatures sent in {time.time()-t:.1f} s")

    # Item 8: 4,150 idle connections from 127.0.0.2, then /healthz from 127.0.0.1.
    idle = []
    for i in range(4150):
        try: idle.append(conn("127.0.0.2"))
        except OSError as e:
            print(f"[{TAG}] item8 idle connection {i}: {e}"); break
    time.sleep(0.5)
    a, took = request("GET", "/healthz", [])
    print(f"[{TAG}] item8 /healthz from 127.0.0.1 with {len(idle)} idle connections from 127.0.0.2: {status(a)} after {took:.2f} s")
    for s in idle: s.close()
    time.sleep(1)

    # Item 9: admin headers and refusals.
    auth = ("Authorization", "Bearer admin-token")
    a, _ = request("GET", "/admin/audit", [auth, ("Accept", "text/html")])
    hdrs = a.split("\r\n\r\n")[0].lower()
    have = [h for h in ["cache-control: no-store", "vary: accept", "x-frame-options: deny", "frame-ancestors 'none'"] if h in hdrs]
    print(f"[{TAG}] item9 HTML audit page headers present: {have}")
    a, _ = request("PUT", "/admin/message-types/PROBE", [auth, ("Content-Type", "text/plain")], b'{"duplicate_key_fields":["$.id"]}')
    print(f"[{TAG}] item9 admin PUT as text/plain: {status(a)}")
    a, _ = request("PUT", "/admin/message-types/PROBE2", [auth, ("Content-Type", "application/json"), ("Origin", "http://evil.example")], b'{"duplicate_key_fields":["$.id"]}')
    print(f"[{TAG}] item9 admin PUT from Origin http://evil.example: {status(a)}")
    a, _ = request("GET", "/admin/messages/%ff", [auth])
    ct = [l for l in a.split("\r\n") if l.lower().startswith("content-type")]
    print(f"[{TAG}] item9 GET /admin/messages/%ff: {status(a)} {ct}")
finally:
    hub.terminate(); hub.wait(60)
db = sqlite3.connect(f"{DIR}/hub.db")
rows, total = db.execute("select count(*), coalesce(sum(coalesce(json_extract(details,'$.count'),1)),0) from audit_events where action='webhook.signature_rejected'").fetchone()
print(f"[{TAG}] item3 webhook.signature_rejected audit rows after shutdown: {rows} (counts add up to {total})")
