#!/usr/bin/env python3
"""A ridepay client that retries the right way, walking one ride through its
life: request it (the fare held), tip it, complete it, refund part of it;
then a declined card. Every write is one operation with one Idempotency-Key, made
fresh for it and sent unchanged on each of its retries, so a retry finishes
or replays the first attempt and never pays twice.

    python3 examples/retrying_client.py --base-url http://127.0.0.1:8080 --api-key ridepay_sk_...

It exits non-zero unless the ride ends captured and part refunded and the
decline is answered 402. Needs `requests` (Debian: apt-get install
python3-requests); examples/README.md has the rules as a table.
"""

import argparse
import collections
import os
import random
import sys
import time
import uuid

try:
    import requests
except ImportError:
    # A python3 without requests (a pyenv one, say): Debian's has it.
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit("retrying_client.py needs requests: apt-get install python3-requests")

# An operation's final answer: the HTTP status and the JSON body ({} if none).
Answer = collections.namedtuple("Answer", "status body")

# Attempts per operation, the first one included: enough to ride out a run
# of gateway failures, few enough that a broken server is reported soon.
MAX_ATTEMPTS = 12
# The backoff doubles from this at each retry (seconds), up to the cap.
BACKOFF_BASE = 0.2
BACKOFF_CAP = 5.0
# A longer Retry-After is not waited out in full: the attempts are bounded.
RETRY_AFTER_CAP = 30.0
# Past this an attempt counts as lost, and is retried with the same key.
REQUEST_TIMEOUT = 10.0

# Only the answers that say "not done yet" are retried:
# 409: our own earlier attempt (one that timed out, say) is still running.
# 429: too many requests: wait as told.
# 503: the gateway was unavailable or its outcome unknown: the key was
#      released at its last recovery point, and a retry resumes from there.
# Everything else is final, and most of it stored under the key, so a retry
# would only replay it: 2xx, 400, 402 (a stored decline), 404, 422 (the key
# reused, or a refusal), 502 (the gateway rejected it for good, stored), 500
# (left for an operator).
RETRIED = {409, 429, 503}


def delay(retry, retry_after):
    """Capped exponential backoff with full jitter (a random wait between
    zero and the cap of this retry), so that clients that failed together
    do not come back together. A Retry-After the server sent is the least we
    wait."""
    ceiling = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** min(retry, 16))
    jittered = random.uniform(0, ceiling)
    if retry_after is None:
        return jittered
    return max(min(retry_after, RETRY_AFTER_CAP), jittered)


def retry_after(response):
    """Retry-After in seconds, the form ridepay sends (an HTTP date is
    ignored: the backoff applies)."""
    try:
        return float(int(response.headers.get("Retry-After", "").strip()))
    except ValueError:
        return None


def problem(body):
    """The last part of a problem's type (card-declined), or ""."""
    return str(body.get("type", "")).rsplit("/", 1)[-1]


def json_of(response):
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


class Api:
    def __init__(self, base_url, api_key):
        self.base_url = base_url.rstrip("/")
        self.session = requests.Session()
        self.session.headers["Authorization"] = "Bearer " + api_key

    def post(self, path, body):
        return self.send("POST", path, body)

    def get(self, path):
        return self.send("GET", path, None)

    def send(self, method, path, body):
        """One operation: attempts until a final Answer, or a RuntimeError
        once MAX_ATTEMPTS have not brought one."""
        # Made once per operation, before the first attempt: a new key on a
        # retry would be a new request, and could pay a second time.
        key = str(uuid.uuid4())
        headers = {"Idempotency-Key": key} if body is not None else {}
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                # requests reads the whole body here, so a body lost halfway
                # is a transport error too.
                response = self.session.request(
                    method, self.base_url + path, json=body, headers=headers,
                    timeout=REQUEST_TIMEOUT)
            # A timeout (REQUEST_TIMEOUT without a byte) or a lost connection:
            # the server may have done the request or not; the same key makes
            # sending it again safe.
            except requests.Timeout:
                why, after = "timed out", None
            except requests.RequestException as err:
                why, after = "transport error: %s" % err, None
            else:
                if response.status_code not in RETRIED:
                    return Answer(response.status_code, json_of(response))
                why = "%d %s" % (response.status_code, problem(json_of(response)))
                after = retry_after(response)
            if attempt < MAX_ATTEMPTS:
                wait = delay(attempt, after)
                print("  attempt %d: %s; retrying in %.1fs (key %s)" % (attempt, why, wait, key))
                time.sleep(wait)
        raise RuntimeError("%s %s: no final answer in %d attempts" % (method, path, MAX_ATTEMPTS))


def ride_request(payment_method):
    """The trip of the README's session, paid by payment_method, its fare held."""
    return {
        "origin_lat": 37.77, "origin_lon": -122.42,
        "target_lat": 37.80, "target_lon": -122.27,
        "amount_cents": 2000, "capture_method": "manual",
        "payment_method": payment_method,
    }


def report(step, answer):
    """Prints a step's final answer: its status, and the ride's (or the
    refund's) status or the problem's type."""
    status = answer.body.get("status")
    about = "status " + status if isinstance(status, str) else problem(answer.body)
    print("%s: %d %s" % (step, answer.status, about))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8080")
    parser.add_argument("--api-key", help="default: the demo user's key, kept by "
                        "`cargo run` in .ridepay/demo-api-key")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # each step as it happens, in CI too
    api_key = args.api_key
    if api_key is None:
        try:
            with open(".ridepay/demo-api-key") as kept:
                api_key = kept.read().strip()
        except OSError:
            sys.exit("no --api-key, and no .ridepay/demo-api-key (run `cargo run` first)")
    api = Api(args.base_url, api_key)
    failures = []

    def expect(ok, what):
        if not ok:
            failures.append(what)

    ride = api.post("/api/rides", ride_request("pm_card_visa"))
    report("request a ride ($20.00 held)", ride)
    if "id" not in ride.body:
        sys.exit("the ride's answer has no id")
    ride_id = ride.body["id"]
    expect(ride.status == 201, "the ride is created")

    # Captured with the fare when the ride is completed.
    tipped = api.post("/api/rides/%s/tip" % ride_id, {"amount_cents": 300})
    report("tip $3.00", tipped)
    expect(tipped.status == 200, "the tip is added")

    done = api.post("/api/rides/%s/complete" % ride_id, {"final_amount_cents": 1800})
    report("complete it ($18.00, and the tip)", done)
    expect(done.status == 200, "the ride is completed")

    refund = api.post("/api/rides/%s/refunds" % ride_id, {"amount_cents": 500})
    report("refund $5.00 of it", refund)
    expect(refund.status == 201, "the refund is made")

    # Where the ride stands now: one ride, whatever the retries were.
    ride = api.get("/api/rides/%s" % ride_id).body
    print("ride %s: status %s, %s cents captured (%s of them the tip), %s refunded" % (
        ride_id, ride.get("status"), ride.get("amount_captured_cents"),
        ride.get("tip_cents"), ride.get("amount_refunded_cents")))
    expect(ride.get("status") == "captured", "the ride ends captured")
    expect(ride.get("amount_captured_cents") == 2100, "$21.00 captured, fare and tip")
    expect(ride.get("amount_refunded_cents") == 500, "$5.00 of it refunded")

    # A decline is a stored, final 402: retrying it (even with a new key)
    # would not make the card pay.
    declined = api.post("/api/rides", ride_request("pm_card_visa_chargeDeclined"))
    report("a declined card", declined)
    expect(declined.status == 402, "the decline is a 402")

    if failures:
        print("FAILED: " + "; ".join(failures), file=sys.stderr)
        return 1
    print("ok: the ride captured and part refunded, the decline answered 402")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as err:
        sys.exit(str(err))
