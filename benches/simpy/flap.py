#!/usr/bin/env python3
"""A straightforward SimPy model of the leasesim "flap" family (speed yardstick only).

Three nodes run client-go's leader election (tools/leaderelection) against one Lease kept
by an in-memory API server. Every request and response crosses a 1-20 ms link, each node's
clock drifts by up to +-D ppm, and the current holder is paused at random (Poisson, mean
interval 60 s, pauses of 3-12 s). One simulated hour per run.

One SimPy process per node (plus one for the pause faults). A request is not a process: the
server applies it in a timeout callback at its arrival time, and the sending node just
yields a timeout until the response (or the client timeout, whichever comes first; both
latencies are drawn when the request is sent).

    python3 flap.py --runs-per-point 100 --drifts 0,1000,10000,100000,300000
    python3 flap.py --quick
"""
import argparse
import random
import statistics
import time
from collections import namedtuple

import simpy

LEASE_DURATION = 15.0
RENEW_DEADLINE = 10.0
RETRY_PERIOD = 2.0
JITTER_FACTOR = 1.2
CLIENT_TIMEOUT = RENEW_DEADLINE / 2
RESTART_DELAY = 10.0
LATENCY = (0.001, 0.020)
PAUSE_MEAN_INTERVAL = 60.0
PAUSE_DURATION = (3.0, 12.0)
NODES = 3
SIM_SECONDS = 3600.0
INF = float("inf")

OK, NOT_FOUND, EXISTS, CONFLICT = "ok", "notfound", "exists", "conflict"
TIMED_OUT = ("timeout", None)

# The Lease's leader-election record. Records are immutable, so the server and the nodes
# share them instead of copying.
Record = namedtuple("Record", "holder lease_duration acquire_time renew_time transitions")


class ApiServer:
    """One Lease object with optimistic concurrency on an integer resourceVersion."""

    def __init__(self):
        self.lease = None
        self.rv = 0
        self.leader_changes = 0

    def get(self):
        if self.lease is None:
            return NOT_FOUND, None, None
        return OK, self.lease, self.rv

    def create(self, record):
        if self.lease is not None:
            return EXISTS, None, None
        self.lease, self.rv = record, 1
        return OK, record, 1

    def update(self, record, rv):
        if self.lease is None:
            return NOT_FOUND, None, None
        if rv != self.rv:
            return CONFLICT, None, None
        if self.lease.holder and record.holder != self.lease.holder:
            self.leader_changes += 1
        self.lease = record
        self.rv += 1
        return OK, record, self.rv


class Node:
    """One process running client-go's LeaderElector, with a drifting clock and pauses."""

    def __init__(self, sim, name, rng, link_rng, drift_ppm):
        self.sim, self.env, self.name = sim, sim.env, name
        self.rng, self.link_rng = rng, link_rng
        self.rate = 1.0 + rng.uniform(-drift_ppm, drift_ppm) * 1e-6
        self.paused = False
        self.resumed = None
        self.observed = None          # observedRecord
        self.observed_time = 0.0      # observedTime (local clock)
        self.rv = None                # resourceVersion of the cached Lease object
        self.env.process(self.run())

    # --- clock, waiting, pauses -------------------------------------------------------
    def local_now(self):
        return self.env.now * self.rate

    def wait(self, event):
        """Yield an event; if it fires while the node is paused, carry on only at resume."""
        value = yield event
        self.sim.events += 1
        while self.paused:
            yield self.resumed
            self.sim.events += 1
        return value

    def sleep(self, local_seconds):
        return self.wait(self.env.timeout(local_seconds / self.rate))

    def pause(self, seconds):
        self.paused, self.resumed = True, self.env.event()
        self.env.timeout(seconds).callbacks.append(self.unpause)

    def unpause(self, _event):
        self.sim.events += 1
        self.paused = False
        self.resumed.succeed()

    # --- talking to the API server ----------------------------------------------------
    def call(self, handler, *args, deadline=INF):
        """Send a request: the server applies it when it arrives (a callback at now + up),
        the node sees the response at now + up + down, or a timeout at the client timeout
        (5 s, cut to the round's deadline) if the response would come later."""
        limit = min(CLIENT_TIMEOUT, deadline - self.local_now())
        if limit <= 0:
            return TIMED_OUT
        env, sim, rng = self.env, self.sim, self.link_rng
        up, down = rng.uniform(*LATENCY), rng.uniform(*LATENCY)
        reply = []

        def arrive(_event):
            sim.events += 1
            reply.append(handler(*args))

        env.timeout(up).callbacks.append(arrive)
        timeout = limit / self.rate
        if up + down >= timeout:
            yield from self.wait(env.timeout(timeout))
            return TIMED_OUT
        yield from self.wait(env.timeout(up + down))
        status, record, rv = reply[0]
        if status == OK:
            self.rv = rv
        return status, record

    # --- client-go LeaderElector ----------------------------------------------------------
    def is_leader(self):
        return self.observed is not None and self.observed.holder == self.name

    def lease_valid(self, now):
        return self.observed_time + self.observed.lease_duration > now

    def observe(self, record):
        self.observed, self.observed_time = record, self.local_now()

    def try_acquire_or_renew(self, deadline=INF):
        server = self.sim.server
        now = self.local_now()
        acquire_time = now

        # Fast path: a valid leader updates with its cached object, skipping the Get.
        if self.is_leader() and self.lease_valid(now):
            acquire_time = self.observed.acquire_time
            record = Record(self.name, LEASE_DURATION, acquire_time, now,
                            self.observed.transitions)
            status, _ = yield from self.call(server.update, record, self.rv, deadline=deadline)
            if status == OK:
                self.observe(record)
                return True

        status, current = yield from self.call(server.get, deadline=deadline)
        if status == NOT_FOUND:
            record = Record(self.name, LEASE_DURATION, acquire_time, now, 0)
            status, _ = yield from self.call(server.create, record, deadline=deadline)
            if status == OK:
                self.observe(record)
            return status == OK
        if status != OK:
            return False
        if current != self.observed:
            self.observe(current)
        if current.holder and self.lease_valid(now) and not self.is_leader():
            return False
        if self.is_leader():
            record = Record(self.name, LEASE_DURATION, current.acquire_time, now,
                            current.transitions)
        else:
            record = Record(self.name, LEASE_DURATION, acquire_time, now,
                            current.transitions + 1)
        status, _ = yield from self.call(server.update, record, self.rv, deadline=deadline)
        if status == OK:
            self.observe(record)
        return status == OK

    def acquire(self):
        """wait.JitterUntil(tryAcquireOrRenew, RP, 1.2, sliding) until it succeeds."""
        while not (yield from self.try_acquire_or_renew()):
            yield from self.sleep(RETRY_PERIOD * (1 + self.rng.random() * JITTER_FACTOR))

    def renew(self):
        """wait.Until(PollImmediateUntil(RP, tryAcquireOrRenew, RD timeout), RP)."""
        while True:
            start = self.local_now()
            deadline, ticks = start + RENEW_DEADLINE, 0
            while not (yield from self.try_acquire_or_renew(deadline)):
                now = self.local_now()
                if now >= deadline:
                    return
                ticks += 1
                tick = start + ticks * RETRY_PERIOD
                if tick > now:
                    yield from self.sleep(tick - now)
                else:  # a missed tick is delivered at once, the others are dropped
                    ticks = int((now - start) // RETRY_PERIOD)
                if self.local_now() >= deadline:
                    return
            yield from self.sleep(RETRY_PERIOD)

    def run(self):
        while True:
            yield from self.acquire()
            self.sim.set_acting(self, True)
            yield from self.renew()
            self.sim.set_acting(self, False)
            yield from self.sleep(RESTART_DELAY)


class Simulation:
    def __init__(self, seed, drift_ppm):
        master = random.Random(seed)
        self.env = simpy.Environment()
        self.server = ApiServer()
        self.events = 0
        self.acting = set()
        self.ever_led = False
        self.last_change = 0.0
        self.dual_leader_seconds = 0.0
        self.leaderless_seconds = 0.0
        self.nodes = {}
        for i in range(NODES):
            rng = random.Random(master.getrandbits(64))
            link_rng = random.Random(master.getrandbits(64))
            name = f"flap-{i}"
            self.nodes[name] = Node(self, name, rng, link_rng, drift_ppm)
        self.fault_rng = random.Random(master.getrandbits(64))
        self.env.process(self.holder_pauses())

    def holder_pauses(self):
        rng = self.fault_rng
        while True:
            yield self.env.timeout(rng.expovariate(1 / PAUSE_MEAN_INTERVAL))
            self.events += 1
            lease = self.server.lease
            node = self.nodes.get(lease.holder) if lease else None
            if node is not None and not node.paused:
                node.pause(rng.uniform(*PAUSE_DURATION))

    def account(self):
        elapsed, self.last_change = self.env.now - self.last_change, self.env.now
        if len(self.acting) >= 2:
            self.dual_leader_seconds += elapsed
        elif not self.acting and self.ever_led:
            self.leaderless_seconds += elapsed

    def set_acting(self, node, acting):
        self.account()
        if acting:
            self.acting.add(node)
            self.ever_led = True
        else:
            self.acting.discard(node)

    def run(self):
        self.env.run(until=SIM_SECONDS)
        self.account()
        lease = self.server.lease
        return {"events": self.events,
                "dual_leader_seconds": self.dual_leader_seconds,
                "leaderless_seconds": self.leaderless_seconds,
                "leader_changes": self.server.leader_changes,
                "lease_transitions": lease.transitions if lease else 0}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-per-point", type=int, default=100)
    parser.add_argument("--drifts", default="0,1000,10000,100000,300000",
                        help="comma-separated D values in ppm")
    parser.add_argument("--quick", action="store_true", help="smoke test: 2 seeds x 5 drifts")
    parser.add_argument("-v", "--verbose", action="store_true", help="mean metrics per drift")
    args = parser.parse_args()
    runs_per_point = 2 if args.quick else args.runs_per_point
    drifts = [float(d) for d in args.drifts.split(",")]

    runs = events = 0
    started = time.perf_counter()
    for drift in drifts:
        results = [Simulation(seed, drift).run() for seed in range(1, runs_per_point + 1)]
        runs += len(results)
        events += sum(r["events"] for r in results)
        if args.verbose:
            means = {k: statistics.mean(r[k] for r in results) for k in results[0]}
            print(f"D={drift:g}ppm " + " ".join(f"{k}={v:.2f}" for k, v in means.items()))
    wall = time.perf_counter() - started
    print(f"simpy flap: runs={runs} events={events} wall={wall:.2f}s "
          f"events/run={events / runs:.0f} runs/s={runs / wall:.2f}")


if __name__ == "__main__":
    main()
