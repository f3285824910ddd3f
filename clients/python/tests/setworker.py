"""A Python worker of the crossed-order lock-set story (tests/locksets.py):
ROUNDS times it takes MEMBERS (comma-separated, in the order given) as the
identity TOKEN names, checks at the registry that it holds every member
(GET /v1/locks/{m}: each member's holder is its own member lease), holds
them HOLD seconds and releases them. It prints one JSON line per round:
{"round", "start", "end"} (time.monotonic(), shared by the processes of
one machine), and exits 0; a round that cannot finish prints
{"error": ...} and exits 1.

The workers start together: each writes SYNC/ID.ready and waits for
PEERS such files. MUTANT=onebyone is the negative control's deliberately
wrong client path: the members taken one at a time, in the order named,
with plain locks (what a user does without lock sets); each worker, its
first member held, waits for the others to hold theirs (SYNC/ID.first),
so crossed orders deadlock every time, each worker holding one member
while it waits for the other; the worker then reports the partial hold
and the deadlock as an error.

Environment: FENCEGATE_URL, FENCEGATE_TOKEN, MEMBERS, ROUNDS, HOLD, SYNC,
ID, PEERS, WAIT (seconds a lock of the one-by-one path may wait, of
which the last call timeout is the registry's answer), MUTANT.
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


SYNC_WAIT_MAX = 20.0
"""How long a worker waits for its peers at a rendezvous, in seconds."""


SET_WAIT = 20.0
"""How long a round of lock_set may wait, in seconds: far beyond any
fair wait here; running out is a deadlock (WAIT bounds only the
one-by-one path, whose deadlock is certain)."""


def rendezvous(what):
    """Say this worker reached what, and wait until every peer has."""
    d, peers = os.environ["SYNC"], int(os.environ["PEERS"])
    open(os.path.join(d, "%s.%s" % (os.environ["ID"], what)), "w").close()
    end = time.monotonic() + SYNC_WAIT_MAX
    while sum(1 for f in os.listdir(d) if f.endswith("." + what)) < peers:
        if time.monotonic() > end:
            raise RuntimeError("rendezvous %s: peers missing after %.0f s" % (what, SYNC_WAIT_MAX))
        time.sleep(0.01)


def main():
    session = fencegate.Session(os.environ["FENCEGATE_URL"], token=os.environ["FENCEGATE_TOKEN"])
    members = os.environ["MEMBERS"].split(",")
    rounds, hold, wait = int(os.environ["ROUNDS"]), float(os.environ["HOLD"]), float(os.environ["WAIT"])
    mutant = os.environ.get("MUTANT", "")
    rendezvous("ready")
    for i in range(rounds):
        if mutant == "onebyone":
            taken = []
            try:
                for m in members:
                    taken.append(session.lock(m, ttl=3, timeout=wait))
                    if len(taken) == 1 and i == 0:
                        rendezvous("first")
            except fencegate.FencegateError as e:
                print(json.dumps({"error": "partial hold: %s held while waiting for the rest: deadlock (%s)"
                                  % ([l.resource for l in taken], type(e).__name__)}), flush=True)
                for l in taken:
                    l.release(drain=False, timeout=5)
                return 1
            leases, release = taken, lambda: [l.release(drain=False, timeout=5) for l in taken]
        else:
            try:
                ls = session.lock_set(members, ttl=3, timeout=SET_WAIT)
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
