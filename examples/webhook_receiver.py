#!/usr/bin/env python3
"""A receiver of ridepay's webhooks, as a ride app runs one: it verifies every
delivery with the Standard Webhooks specification's own library, drops a
delivery it has seen (by `webhook-id`: delivery is at least once) and an
event older than one it has (by `sequence`, per ride: order is not
promised), and keeps each ride's latest state.

    python3 examples/webhook_receiver.py --base-url http://127.0.0.1:8080 --api-key ridepay_sk_...

It listens on a loopback port, registers itself (`POST /api/webhook_endpoints`,
so the server must run with OUTBOUND_WEBHOOK_ALLOW_LOOPBACK=true; a real
receiver is an https:// URL on the internet), then walks a ride (held, then
completed) and exits 0 once the events have brought that ride to `captured`,
non-zero if they have not within a minute. Needs `requests` and
`standardwebhooks` (pip install standardwebhooks).
"""

import argparse
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

TRIP = {"origin_lat": 37.77, "origin_lon": -122.42, "target_lat": 37.80,
        "target_lon": -122.27, "amount_cents": 2000, "payment_method": "pm_card_visa"}


class Rides:
    """What the receiver knows: each ride's latest state, and the deliveries
    it has taken."""

    def __init__(self):
        self.lock = threading.Lock()
        self.seen = set()
        self.latest = {}
        self.duplicates = 0
        self.stale = 0

    def take(self, message_id, event):
        ride = event["data"]["ride"]
        with self.lock:
            if message_id in self.seen:
                self.duplicates += 1
                return
            self.seen.add(message_id)
            sequence, _ = self.latest.get(ride["id"], (0, None))
            if event["sequence"] <= sequence:
                self.stale += 1
                return
            self.latest[ride["id"]] = (event["sequence"], ride)
        print("event %s: ride %s is %s (sequence %d)"
              % (event["type"], ride["id"], ride["status"], event["sequence"]))

    def status_of(self, ride_id):
        with self.lock:
            _, ride = self.latest.get(ride_id, (0, None))
            return ride and ride["status"]


def handler(webhook, rides):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            try:
                event = webhook.verify(body, dict(self.headers))
            except WebhookVerificationError as err:
                # Not ridepay's, or not recent: refused, never acted on.
                print("refused a delivery: %s" % err, file=sys.stderr)
                self.send_response(400)
                self.end_headers()
                return
            rides.take(self.headers["webhook-id"], event)
            # Taken (or known already): a 2xx, so ridepay stops sending it.
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    return Handler


class Api:
    """ridepay's API; each write under a key of its own, retried with the
    same key while the answer says "not done yet" (see retrying_client.py)."""

    def __init__(self, base_url, api_key):
        self.base_url = base_url.rstrip("/")
        self.session = requests.Session()
        self.session.headers["Authorization"] = "Bearer " + api_key

    def post(self, path, body):
        key = str(uuid.uuid4())
        for _ in range(40):
            try:
                answer = self.session.post(self.base_url + path, json=body, timeout=10,
                                           headers={"Idempotency-Key": key})
            except requests.RequestException:
                time.sleep(0.5)
                continue
            if answer.status_code in (409, 429) or answer.status_code >= 500 and \
                    answer.status_code != 502:
                time.sleep(float(answer.headers.get("Retry-After", "0.5")))
                continue
            return answer
        sys.exit("%s never answered for good" % path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    args = parser.parse_args()
    api = Api(args.base_url, args.api_key)

    rides = Rides()
    server = ThreadingHTTPServer(("127.0.0.1", 0), None)
    url = "http://127.0.0.1:%d/ridepay-events" % server.server_address[1]
    registered = api.post("/api/webhook_endpoints", {"url": url, "events": ["ride.*"]})
    if registered.status_code != 201:
        sys.exit("registering %s: %d %s" % (url, registered.status_code, registered.text))
    destination = registered.json()
    print("registered destination %s for %s" % (destination["id"], url))
    server.RequestHandlerClass = handler(Webhook(destination["secret"]), rides)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    ride = api.post("/api/rides", TRIP)
    if ride.status_code != 201:
        sys.exit("the ride: %d %s" % (ride.status_code, ride.text))
    ride_id = ride.json()["id"]
    done = api.post("/api/rides/%s/complete" % ride_id, {"final_amount_cents": 1800})
    if done.status_code != 200:
        sys.exit("completing ride %s: %d %s" % (ride_id, done.status_code, done.text))

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and rides.status_of(ride_id) != "captured":
        time.sleep(0.2)
    server.shutdown()
    status = rides.status_of(ride_id)
    print("ride %s as its events tell it: %s (%d duplicates and %d stale events dropped)"
          % (ride_id, status, rides.duplicates, rides.stale))
    if status != "captured":
        print("FAILED: the events did not bring ride %s to captured" % ride_id, file=sys.stderr)
        return 1
    print("ok: every delivery verified, ride %s captured" % ride_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
