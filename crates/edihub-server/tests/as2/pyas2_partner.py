#!/usr/bin/env python3
"""An independent AS2 partner for edihub's interop tests, built on pyas2lib.

Usage: pyas2_partner.py COMMAND DIR

DIR holds partner.pem (the partner's key and certificate), edihub.pem (edihub's
certificate) and cases.json (a list of cases: name, sign, encrypt, compress,
enc_alg, digest_alg; optionally mdn_mode SYNC or ASYNC, mdn_url, mdn_digest_alg
(null: an unsigned MDN), content_type (default application/edi-x12)). Each command reads and writes files named after the
cases and prints one JSON object to stdout, keyed by case name. `build` sends
NAME.payload when it exists, else payload.

  build        pyas2lib builds a message per case: NAME.msg.headers.json and
               NAME.msg.body; prints the Message-ID and MIC it expects back.
  verify-mdns  pyas2lib reads edihub's MDN per case (NAME.mdn.headers.json,
               NAME.mdn.body) for the message of `build` (message_id and mic in
               NAME.sent.json): prints pyas2lib's (status, detailed_status).
  parse        pyas2lib opens edihub's message per case (NAME.msg.*) and
               answers it with its MDN (NAME.pymdn.*): prints the payload it
               read (base64), its MIC, and its status.
"""
import base64
import importlib.abc
import importlib.util
import json
import os
import sys


class _OscryptoVersionFix(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """oscrypto 1.3.0 (the newest on PyPI) cannot read OpenSSL versions with a
    two-digit patch number (3.0.10 and later): its version regex expects one
    digit. Load its libcrypto modules with the regex that upstream fixed."""

    NAMES = {"oscrypto._openssl._libcrypto_cffi", "oscrypto._openssl._libcrypto_ctypes"}
    OLD = "\\\\d\\\\.\\\\d\\\\.\\\\d[a-z]*"
    NEW = "\\\\d\\\\.\\\\d\\\\.\\\\d+[a-z]*"

    def find_spec(self, name, path, target=None):
        if name not in self.NAMES:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.origin is None:
            return None
        return importlib.util.spec_from_file_location(name, spec.origin, loader=self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        with open(module.__spec__.origin, encoding="utf-8") as f:
            source = f.read().replace(self.OLD, self.NEW)
        exec(compile(source, module.__spec__.origin, "exec"), module.__dict__)


sys.meta_path.insert(0, _OscryptoVersionFix())

from pyas2lib import Mdn, Message, Organization, Partner  # noqa: E402

PAYLOAD_NAME = "po.x12"


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f)


def raw_http(headers, body):
    """Headers and body the way an AS2 server hands them to pyas2lib."""
    head = "".join(f"{name}: {value}\r\n" for name, value in headers)
    return head.encode("utf-8") + b"\r\n" + body


def load_http(directory, stem):
    headers = read_json(os.path.join(directory, stem + ".headers.json"))
    with open(os.path.join(directory, stem + ".body"), "rb") as f:
        body = f.read()
    return headers, body


def save_http(directory, stem, headers, body):
    write_json(os.path.join(directory, stem + ".headers.json"), [[k, v] for k, v in headers])
    with open(os.path.join(directory, stem + ".body"), "wb") as f:
        f.write(body)


class Setup:
    def __init__(self, directory):
        with open(os.path.join(directory, "partner.pem"), "rb") as f:
            self.partner_pem = f.read()
        with open(os.path.join(directory, "edihub.pem"), "rb") as f:
            self.edihub_cert = f.read()

    def org(self, case):
        """The partner, asking for its MDN where the case says."""
        return Organization(
            as2_name="PARTNER",
            sign_key=self.partner_pem,
            decrypt_key=self.partner_pem,
            mdn_url=case.get("mdn_url", "http://127.0.0.1:1/as2"),
        )

    def edihub(self, case):
        """edihub as pyas2lib's partner, with the case's settings."""
        return Partner(
            as2_name="EDIHUB",
            verify_cert=self.edihub_cert,
            encrypt_cert=self.edihub_cert,
            sign=case["sign"],
            encrypt=case["encrypt"],
            compress=case["compress"],
            enc_alg=case["enc_alg"],
            digest_alg=case["digest_alg"],
            mdn_mode=case.get("mdn_mode", "SYNC"),
            mdn_digest_alg=case.get("mdn_digest_alg", case["digest_alg"]),
        )


def build(directory, cases, setup):
    out = {}
    for case in cases:
        own = os.path.join(directory, case["name"] + ".payload")
        with open(own if os.path.exists(own) else os.path.join(directory, "payload"), "rb") as f:
            payload = f.read()
        message = Message(sender=setup.org(case), receiver=setup.edihub(case))
        content_type = case.get("content_type", "application/edi-x12")
        message.build(payload, filename=PAYLOAD_NAME, content_type=content_type, subject="PO")
        headers = list(message.headers.items())
        save_http(directory, case["name"] + ".msg", headers, message.content)
        mic = message.mic.decode() if message.mic else None
        out[case["name"]] = {"message_id": message.message_id, "mic": mic}
    return out


def verify_mdns(directory, cases, setup):
    out = {}
    for case in cases:
        sent = read_json(os.path.join(directory, case["name"] + ".sent.json"))
        original = Message(sender=setup.org(case), receiver=setup.edihub(case))
        original.message_id = sent["message_id"]
        original.mic = sent["mic"].encode() if sent["mic"] else None
        headers, body = load_http(directory, case["name"] + ".mdn")

        def find_message(message_id, recipient, original=original):
            return original if message_id == original.message_id else None

        status, detail = Mdn().parse(raw_http(headers, body), find_message)
        out[case["name"]] = [status, detail]
    return out


def parse(directory, cases, setup):
    out = {}
    for case in cases:
        headers, body = load_http(directory, case["name"] + ".msg")
        edihub = setup.edihub(case)
        message = Message()
        status, (exception, _trace), mdn = message.parse(
            raw_http(headers, body), find_org_partner_cb=lambda org, partner, case=case: (setup.org(case), edihub)
        )
        if mdn is not None:
            save_http(directory, case["name"] + ".pymdn", list(mdn.headers.items()), mdn.content)
        out[case["name"]] = {
            "status": status,
            "error": str(exception) if exception else None,
            "payload": base64.b64encode(message.content).decode() if status == "processed" else None,
            "mic": message.mic.decode() if message.mic else None,
            "signed": message.signed,
            "encrypted": message.encrypted,
            "compressed": message.compressed,
            "mdn": mdn is not None,
        }
    return out


def main():
    command, directory = sys.argv[1], sys.argv[2]
    cases = read_json(os.path.join(directory, "cases.json"))
    setup = Setup(directory)
    run = {"build": build, "verify-mdns": verify_mdns, "parse": parse}[command]
    json.dump(run(directory, cases, setup), sys.stdout)


if __name__ == "__main__":
    main()
