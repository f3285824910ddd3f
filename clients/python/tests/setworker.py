"""A Python worker of the crossed-order lock-set story (tests/locksets.py):
ROUNDS times it takes MEMBERS (comma-separated, in the order given) as the
identity TOKEN names, checks at the registry that it holds every member
(GET /v1/locks/{m}: each member's holder is its own member lease), holds
them HOLD seconds and releases them. It prints one JSON line per round:
{"round", "start", "end"} (time.monotonic(), shared by the processes of
one machine), and exits 0; a round that cannot finish prints
{"error": ...} and exits 1.

START (time.monotonic()) is when to begin, so that the workers start
together. MUTANT=onebyone is the negative control's deliberately wrong
client path: the members taken one at a time, in the order named, with
plain locks (what a user does without lock sets): crossed orders
deadlock, each worker holding one member while it waits for the other;
the worker then reports the partial hold and the deadlock as an error.

Environment: FENCEGATE_URL, FENCEGATE_TOKEN, MEMBERS, ROUNDS, HOLD, START,
WAIT (seconds a round may wait), MUTANT.
"""

import json
import os
import sys
import time

import fencegate


def held_by_me(session, leases):
    """The members whose registry holder is not this worker's member lease."""
    wrong = []
    for lease in leases:
        st = session.transport.lock_status(lease.resource, 5)
        holder = st.get("holder") or {}
        if holder.get("lease") != lease.lease_id:
            wrong.append("%s held by %s, not %s" % (lease.resource, holder.get("lease"), lease.lease_id))
    return wrong


def main():
    session = fencegate.Session(os.environ["FENCEGATE_URL"], token=os.environ["FENCEGATE_TOKEN"])
    members = os.environ["MEMBERS"].split(",")
    rounds, hold, wait = int(os.environ["ROUNDS"]), float(os.environ["HOLD"]), float(os.environ["WAIT"])
    mutant = os.environ.get("MUTANT", "")
    time.sleep(max(float(os.environ["START"]) - time.monotonic(), 0))
    for i in range(rounds):
        if mutant == "onebyone":
            taken = []
            try:
                for m in members:
                    taken.append(session.lock(m, ttl=3, timeout=wait))
                    time.sleep(hold)
            except fencegate.FencegateError as e:
                print(json.dumps({"error": "partial hold: %s held while waiting for the rest: deadlock (%s)"
                                  % ([l.resource for l in taken], type(e).__name__)}), flush=True)
                for l in taken:
                    l.release(drain=False, timeout=5)
                return 1
            leases, release = taken, lambda: [l.release(drain=False, timeout=5) for l in taken]
        else:
            try:
                ls = session.lock_set(members, ttl=3, timeout=wait)
            except fencegate.FencegateError as e:
                print(json.dumps({"error": "round %d: lock_set: %s: %s" % (i, type(e).__name__, e)}), flush=True)
                return 1
            leases, release = ls.leases, lambda: ls.release(drain=False, timeout=5)
        start = time.monotonic()
        wrong = held_by_me(session, leases)
        time.sleep(hold)
        wrong += held_by_me(session, leases)
        end = time.monotonic()
        release()
        if wrong:
            print(json.dumps({"error": "round %d: not every member held: %s" % (i, wrong)}), flush=True)
            return 1
        print(json.dumps({"round": i, "start": start, "end": end, "fences": [l.fence for l in leases]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
