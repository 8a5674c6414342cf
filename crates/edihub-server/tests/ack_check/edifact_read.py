"""Reads an EDIFACT acknowledgement (CONTRL) from stdin with pydifact and
prints what pydifact read as JSON.

pydifact parses the service string advice, release characters, composites
and the UNB header, and writes interchanges and messages back with the
trailers it computes itself: UNZ 0036 counting the messages and UNZ 0020
repeating UNB 0020, UNT 0074 counting a message's segments with UNH and
UNT and UNT 0062 repeating UNH 0062. The acknowledgement must come back
from that round trip byte for byte, and so must each of its messages, so
its counts and references are the ones pydifact computes. Exit 1 with the
reason on stderr otherwise.
"""

import json
import sys
import warnings

from pydifact.parser import Parser
from pydifact.segmentcollection import Interchange


def main() -> int:
    warnings.simplefilter("ignore")
    text = sys.stdin.read()
    interchange = Interchange.from_str(text)
    written = interchange.serialize()
    if written != text:
        print(f"pydifact writes the interchange back differently:\n{written}\nnot\n{text}", file=sys.stderr)
        return 1
    tags = [s.tag for s in Parser().parse(text)]
    if tags[-1] != "UNZ" or tags.count("UNH") != tags.count("UNT"):
        print(f"unbalanced envelope: {tags}", file=sys.stderr)
        return 1
    for message in interchange.get_messages():
        if message.serialize() not in text:
            print(f"pydifact writes a message back differently: {message.serialize()}", file=sys.stderr)
            return 1
    messages = [
        {
            "reference": m.reference_number,
            "identifier": m.identifier,
            "segments": [[s.tag, *s.elements] for s in m.segments],
        }
        for m in interchange.get_messages()
    ]
    print(
        json.dumps(
            {
                "syntax_identifier": list(interchange.syntax_identifier),
                "sender": interchange.sender,
                "recipient": interchange.recipient,
                "control_reference": interchange.control_reference,
                "has_una": interchange.has_una_segment,
                "messages": messages,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
