"""Counts the API server's requests in an audit log (`FERRY_AUDIT_LOG=<file> scripts/testenv up`, see
docs/testenv.md): by client, and by client, verb and resource, each with its share of the total.

    python3 scripts/lib/audit_summary.py FILE [--top N]

Clients: `operator` (a ServiceAccount: the tests' operators act as the chart's), `kubelet`, and the
admin's requests by user agent (`tests` when the client sends none: the tests' own kube client).
"""

from __future__ import annotations

import argparse
import collections
import json


def client_of(event: dict) -> str:
    user = (event.get("impersonatedUser") or event.get("user") or {}).get("username", "?")
    if user.startswith("system:serviceaccount:"):
        return "operator"
    if user.startswith("system:node:"):
        return "kubelet"
    if user.startswith("system:"):
        return user
    agent = event.get("userAgent", "").split("/")[0]
    return agent or "tests"


def resource_of(event: dict) -> str:
    ref = event.get("objectRef") or {}
    resource = ref.get("resource", "-")
    return f"{resource}/{ref['subresource']}" if ref.get("subresource") else resource


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    clients: collections.Counter = collections.Counter()
    requests: collections.Counter = collections.Counter()
    first = last = ""
    with open(args.file, encoding="utf-8") as log:
        for line in log:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            client = client_of(event)
            clients[client] += 1
            requests[(client, event.get("verb", "?"), resource_of(event))] += 1
            stamp = event.get("stageTimestamp", "")
            first = first or stamp
            last = stamp or last
    total = sum(clients.values()) or 1
    print(f"{total} requests, {first} to {last}")
    for client, count in clients.most_common():
        print(f"{count:8d} {count / total:6.1%}  {client}")
    print()
    for (client, verb, resource), count in requests.most_common(args.top):
        print(f"{count:8d} {count / total:6.1%}  {client} {verb} {resource}")


if __name__ == "__main__":
    main()
