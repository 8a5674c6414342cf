#!/usr/bin/env python3
"""An AS2 partner's HTTP server for edihub's send tests, built on pyas2lib.

Usage: pyas2_receiver.py DIR

DIR holds partner.pem (the partner's key and certificate), edihub.pem
(edihub's certificate) and case.json (one case as pyas2_partner.py reads
them: sign, encrypt, compress, enc_alg, digest_alg). The server listens on a
free loopback port and prints it on the first line of stdout. pyas2lib opens
each POST and the server answers with pyas2lib's synchronous MDN (or an
empty 200 when the message asks for an asynchronous one); what it read is
written to DIR as received-N.payload and received-N.json (status, error,
Message-ID, MIC).
"""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyas2_partner as partner  # noqa: E402  (loads pyas2lib with its fix)

DIRECTORY = sys.argv[1]
SETUP = partner.Setup(DIRECTORY)
CASE = partner.read_json(os.path.join(DIRECTORY, "case.json"))
EDIHUB = SETUP.edihub(CASE)
RECEIVED = [0]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        message = partner.Message()
        status, (exception, _trace), mdn = message.parse(
            partner.raw_http(list(self.headers.items()), body),
            find_org_partner_cb=lambda org, them: (SETUP.org(CASE), EDIHUB),
        )
        RECEIVED[0] += 1
        stem = os.path.join(DIRECTORY, f"received-{RECEIVED[0]}")
        if status == "processed":
            with open(stem + ".payload", "wb") as f:
                f.write(message.content)
        partner.write_json(stem + ".json", {
            "status": status,
            "error": str(exception) if exception else None,
            "message_id": message.message_id,
            "mic": message.mic.decode() if message.mic else None,
        })
        asks_async = self.headers.get("Receipt-Delivery-Option")
        if mdn is None or asks_async:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        for name, value in mdn.headers.items():
            if name.lower() not in ("content-length", "mime-version"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(mdn.content)))
        self.end_headers()
        self.wfile.write(mdn.content)

    def log_message(self, *args):
        pass


def main():
    server = HTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
