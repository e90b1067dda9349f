#!/usr/bin/env python3
"""Harness: the real Python `kubernetes` client (kubernetes==37.0.2, its
`kubernetes.leaderelection` with `LeaseLock`) elects a leader against
`leasesim serve`, under a fault on the leader, and measures who led when.

    python3 benches/python-client/run.py [--scenario kill|put500|gethang|all]
        [--repeats N] [--out DIR] [--leasesim PATH] [--venv DIR]

See README.md beside this file.
"""

import argparse
import base64
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ELECTOR = os.path.join(HERE, "elector.py")
KUBERNETES_VERSION = "37.0.2"
SCENARIOS = ("kill", "put500", "gethang")
IDENTITIES = ("A", "B", "C")
LEASE = "op-leader/widget-operator"

# The timeline of one run, in seconds after A is launched.
T_START_OTHERS = 1.0
T_FAULT = 8.0
T_END = 40.0
T_HOLDER_WAIT = 6.0  # how long past T_FAULT to wait for A to hold the Lease


# --------------------------------------------------------------------------- venv

def venv_python(venv):
    return os.path.join(venv, "bin", "python")


def has_kubernetes(python):
    r = subprocess.run([python, "-c", "import kubernetes; print(kubernetes.__version__)"],
                       capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() == KUBERNETES_VERSION


def ensure_venv(args):
    """Re-executes this script under a venv that has kubernetes==37.0.2."""
    if args.venv and os.path.realpath(sys.prefix) == os.path.realpath(args.venv):
        return  # already re-executed inside it
    venv = args.venv or os.path.join(tempfile.mkdtemp(prefix="leasesim-pyclient-"), "venv")
    py = venv_python(venv)
    if not os.path.exists(py):
        print("creating venv %s" % venv, flush=True)
        subprocess.check_call([sys.executable, "-m", "venv", venv])
    if not has_kubernetes(py):
        print("installing kubernetes==%s into %s" % (KUBERNETES_VERSION, venv), flush=True)
        subprocess.check_call([py, "-m", "pip", "install", "-q",
                               "kubernetes==%s" % KUBERNETES_VERSION])
    argv = [a for a in sys.argv[1:]]
    if "--venv" not in argv:
        argv += ["--venv", venv]
    os.execv(py, [py, os.path.abspath(__file__)] + argv)


# ------------------------------------------------------------------------- server

class Serve:
    """One `leasesim serve` process and its admin endpoints."""

    def __init__(self, leasesim, workdir):
        self.leasesim = leasesim
        self.workdir = workdir
        self.kubeconfig = os.path.join(workdir, "kubeconfig")
        self.port_file = os.path.join(workdir, "port")
        self.out = os.path.join(workdir, "serve")
        self.proc = None

    def start(self):
        cmd = [self.leasesim, "serve", "--listen", "127.0.0.1:0", "--port-file", self.port_file,
               "--kubeconfig", self.kubeconfig, "--out", self.out]
        for ident in IDENTITIES:
            cmd += ["--client", ident]
        self.stdout = open(os.path.join(self.workdir, "serve.stdout"), "w")
        self.stderr = open(os.path.join(self.workdir, "serve.stderr"), "w")
        self.proc = subprocess.Popen(cmd, stdout=self.stdout, stderr=self.stderr, cwd=self.workdir)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("leasesim serve exited with %s (see %s)"
                                   % (self.proc.returncode, self.workdir))
            if os.path.exists(self.port_file) and open(self.port_file).read().strip():
                if os.path.exists(self.kubeconfig):
                    break
            time.sleep(0.05)
        else:
            raise RuntimeError("leasesim serve wrote no port file in 30 s")
        import yaml
        with open(self.kubeconfig) as f:
            kc = yaml.safe_load(f)
        cluster = kc["clusters"][0]["cluster"]
        self.url = cluster["server"].rstrip("/")
        self.ssl_ctx = ssl.create_default_context(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        self.tokens = {u["name"]: u["user"]["token"] for u in kc["users"]}

    def call(self, method, path, body=None, token=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": "Bearer " + (token or self.tokens["admin"]),
            "Content-Type": "application/json",
        })
        try:
            with urllib.request.urlopen(req, context=self.ssl_ctx, timeout=10) as resp:
                text = resp.read().decode()
                status = resp.status
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace")
            status = e.code
        try:
            return status, json.loads(text) if text else None
        except ValueError:
            return status, text

    def zero_wall(self):
        """The wall time at which the server's t was 0 (best of 5 samples)."""
        best = None
        for _ in range(5):
            before = time.time()
            status, state = self.call("GET", "/leasesim/v1/state")
            after = time.time()
            if status != 200:
                continue
            rtt = after - before
            z = (before + after) / 2 - state["t"]
            if best is None or rtt < best[0]:
                best = (rtt, z)
        return best[1]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stdout.close()
        self.stderr.close()
        return self.proc.returncode


def setup_rbac(kubeconfig):
    """As admin: namespace op-leader, a Role on leases and a RoleBinding for A, B, C."""
    from kubernetes import client, config
    api = config.new_client_from_config(config_file=kubeconfig, context="leasesim")
    client.CoreV1Api(api).create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name="op-leader")))
    rbac = client.RbacAuthorizationV1Api(api)
    rbac.create_namespaced_role("op-leader", client.V1Role(
        metadata=client.V1ObjectMeta(name="lease-elector"),
        rules=[client.V1PolicyRule(api_groups=["coordination.k8s.io"], resources=["leases"],
                                   verbs=["get", "create", "update"])]))
    rbac.create_namespaced_role_binding("op-leader", client.V1RoleBinding(
        metadata=client.V1ObjectMeta(name="lease-elector"),
        role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role",
                                  name="lease-elector"),
        subjects=[client.RbacV1Subject(kind="User", name=n, api_group="rbac.authorization.k8s.io")
                  for n in IDENTITIES]))
    api.close()


def lease_holder(state):
    for lease in (state or {}).get("leases", []):
        name = "%s/%s" % (lease.get("namespace"), lease.get("name"))
        if name == LEASE or lease.get("name") == "widget-operator" or lease.get("lease") == LEASE:
            return lease.get("holder")
    return None


FAULT_RULES = {
    "put500": {"client": "A", "kind": "status", "code": 500, "verb": "update", "at": "0s"},
    "gethang": {"client": "A", "kind": "hang", "max": "20s", "verb": "get", "count": 1, "at": "0s"},
}


# ------------------------------------------------------------------------ one run

def run_once(args, scenario, repeat):
    workdir = os.path.join(args.out, scenario, "r%d" % repeat)
    os.makedirs(workdir, exist_ok=True)
    for f in os.listdir(workdir):
        p = os.path.join(workdir, f)
        if os.path.isfile(p):
            os.remove(p)
    serve = Serve(args.leasesim, workdir)
    serve.start()
    notes = []
    procs = {}
    logs = {}
    polls = []
    fault = {"scenario": scenario}
    try:
        setup_rbac(serve.kubeconfig)
        zero = serve.zero_wall()

        def launch(ident):
            out = open(os.path.join(workdir, "%s.log" % ident), "w")
            err = open(os.path.join(workdir, "%s.err" % ident), "w")
            logs[ident] = (out, err)
            procs[ident] = subprocess.Popen([sys.executable, "-u", ELECTOR, ident, serve.kubeconfig],
                                            stdout=out, stderr=err, cwd=workdir)

        t0 = time.time()
        launch("A")
        time.sleep(T_START_OTHERS)
        launch("B")
        launch("C")

        def rel():
            return time.time() - t0

        def poll():
            status, state = serve.call("GET", "/leasesim/v1/state")
            holder = lease_holder(state) if status == 200 else None
            polls.append({"t": round(rel(), 3), "status": status, "holder": holder})
            return holder

        while rel() < T_FAULT:
            poll()
            time.sleep(min(1.0, max(0.0, T_FAULT - rel())))
        holder = poll()
        while holder != "A" and rel() < T_FAULT + T_HOLDER_WAIT:
            time.sleep(0.25)
            holder = poll()
        fault["a_held_lease"] = holder == "A"
        fault["holder_at_fault"] = holder
        if holder != "A":
            notes.append("A did not hold the Lease by t=%.1f (holder %r); fault applied anyway"
                         % (rel(), holder))
        fault["t"] = round(rel(), 3)
        if scenario == "kill":
            procs["A"].send_signal(signal.SIGKILL)
            fault["how"] = "SIGKILL A (pid %d)" % procs["A"].pid
        else:
            rule = FAULT_RULES[scenario]
            status, body = serve.call("POST", "/leasesim/v1/faults", rule)
            fault["how"] = "POST /leasesim/v1/faults %s" % json.dumps(rule)
            fault["response"] = {"status": status, "body": body}
            if status >= 300:
                notes.append("fault POST answered %s: %s" % (status, body))

        while rel() < T_END:
            poll()
            time.sleep(min(1.0, max(0.0, T_END - rel())))
        status, state = serve.call("GET", "/leasesim/v1/state")
        final_state = state
        t_stop = rel()
        for ident, p in procs.items():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.time() + 3
        for ident, p in procs.items():
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                notes.append("%s did not exit on SIGTERM; SIGKILLed" % ident)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        for out, err in logs.values():
            out.close()
            err.close()
        serve_rc = serve.stop()
    exit_codes = {i: p.returncode for i, p in procs.items()}
    return analyse(workdir, serve, scenario, repeat, t0, zero, t_stop, fault, polls,
                   final_state, exit_codes, serve_rc, notes)


# ---------------------------------------------------------------------- analysis

def overlap(intervals_by_ident):
    """Windows where two or more identities lead at once: [(start, end, [idents])]."""
    events = []
    for ident, ivs in intervals_by_ident.items():
        for s, e in ivs:
            if e > s:
                events.append((s, 1, ident))
                events.append((e, -1, ident))
    events.sort(key=lambda x: (x[0], x[1]))
    active = set()
    windows = []
    start = None
    for t, kind, ident in events:
        if kind == 1:
            active.add(ident)
        else:
            active.discard(ident)
        if len(active) >= 2 and start is None:
            start = (t, set(active))
        elif len(active) >= 2 and start is not None:
            start[1].update(active)
        elif len(active) < 2 and start is not None:
            windows.append((start[0], t, sorted(start[1])))
            start = None
    return [w for w in windows if w[1] > w[0]]


def read_log(path):
    lines = []
    if not os.path.exists(path):
        return lines
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 3)
            if len(parts) < 3:
                continue
            try:
                t = float(parts[0])
            except ValueError:
                continue
            lines.append({"t": t, "identity": parts[1], "event": parts[2],
                          "detail": parts[3] if len(parts) > 3 else ""})
    return lines


def r3(x):
    return None if x is None else round(x, 3)


def analyse(workdir, serve, scenario, repeat, t0, zero, t_stop, fault, polls, final_state,
            exit_codes, serve_rc, notes):
    def srv(t):  # server seconds -> seconds after A's launch
        return t + zero - t0

    out = serve.out
    summary = None
    summary_path = os.path.join(out, "summary.json")
    if os.path.exists(summary_path):
        with open(summary_path) as f:
            summary = json.load(f)
    else:
        notes.append("no summary.json in %s" % out)
    record = []
    controls = []
    record_path = os.path.join(out, "record.jsonl")
    if os.path.exists(record_path):
        with open(record_path) as f:
            for line in f:
                if not line.strip():
                    continue
                line = json.loads(line)
                # Requests have "n"; the admin's fault rules are {"control": "fault", ...}.
                (record if "n" in line else controls).append(line)
    else:
        notes.append("no record.jsonl in %s" % out)

    # The electors' own words.
    electors = {}
    leading = {}
    for ident in IDENTITIES:
        lines = read_log(os.path.join(workdir, "%s.log" % ident))
        ev = [{"t": r3(l["t"] - t0), "event": l["event"], "detail": l["detail"]} for l in lines]
        started = [e["t"] for e in ev if e["event"] == "started"]
        stopped = [e["t"] for e in ev if e["event"] == "stopped"]
        ended = [e for e in ev if e["event"] in ("run-returned", "run-raised", "sigterm")]
        end_t = None
        end_how = None
        if scenario == "kill" and ident == "A":
            end_t, end_how = fault["t"], "SIGKILL"
        elif ended:
            end_t, end_how = ended[0]["t"], (ended[0]["event"] + " " + ended[0]["detail"]).strip()
        else:
            end_t, end_how = r3(t_stop), "harness stop"
        ivs = []
        for s in started:
            nxt = [x for x in stopped if x >= s]
            e = min(nxt[0], end_t) if nxt else end_t
            ivs.append([s, r3(e)])
        leading[ident] = [tuple(iv) for iv in ivs]
        electors[ident] = {"events": ev, "started": started, "stopped": stopped,
                           "process_end": end_t, "process_end_how": end_how,
                           "exit_code": exit_codes.get(ident), "leading_intervals": ivs}

    client_windows = overlap(leading)
    client_dual = sum(e - s for s, e, _ in client_windows)

    # Who held the Lease when, from the record: each successful create/update of
    # the Lease by an identity (LeaseLock always writes its own identity as holder).
    lease_writes = [r for r in record
                    if r.get("resource") == "leases" and r.get("method") in ("PUT", "POST")
                    and r.get("identity") in IDENTITIES and 200 <= int(r.get("status") or 0) < 300]
    holder_changes = []
    for r in lease_writes:
        if not holder_changes or holder_changes[-1]["holder"] != r["identity"]:
            holder_changes.append({"t": r3(srv(r["t"])), "holder": r["identity"],
                                   "method": r["method"], "n": r.get("n")})
    last_write = {}
    for r in lease_writes:
        last_write[r["identity"]] = r3(srv(r["t"]))

    poll_changes = []
    for p in polls:
        if not poll_changes or poll_changes[-1]["holder"] != p["holder"]:
            poll_changes.append({"t": p["t"], "holder": p["holder"]})

    t_fault = fault.get("t", T_FAULT)
    takeover_client = min([t for i in ("B", "C") for t in electors[i]["started"] if t >= t_fault],
                          default=None)
    takeover_who = next((i for i in ("B", "C") if takeover_client in electors[i]["started"]), None)
    takeover_record = next((h for h in holder_changes if h["holder"] in ("B", "C")
                            and h["t"] >= t_fault), None)
    a = electors["A"]
    a_stopped = a["stopped"][0] if a["stopped"] else None

    # The server's own account.
    server = {}
    if summary:
        m = summary.get("metrics", {})
        server = {
            "dual_leader_seconds": m.get("dual_leader_seconds"),
            "dual_leader_windows": m.get("dual_leader_windows"),
            "max_dual_leader_seconds": m.get("max_dual_leader_seconds"),
            "leaderless_seconds": m.get("leaderless_seconds"),
            "lease_transitions": m.get("lease_transitions"),
            "leader_changes": m.get("leader_changes"),
            "failover_seconds": m.get("failover_seconds"),
            "api_requests_by_verb_status": m.get("api_requests_by_verb_status"),
            "windows": summary.get("dual_leader_windows"),
            "duration_seconds": summary.get("duration_seconds"),
        }

    # Anything odd in the record: errors that no fault rule explains.
    odd = []
    faulted = []
    for r in record:
        st = int(r.get("status") or 0)
        if r.get("fault"):
            faulted.append(r)
            continue
        if r.get("identity") not in IDENTITIES:
            if st >= 400:
                odd.append(r)
            continue
        if st < 400:
            continue
        if st == 404 and r.get("method") == "GET" and r.get("resource") == "leases" and not lease_writes:
            continue
        if st == 404 and r.get("method") == "GET" and r.get("resource") == "leases" \
                and lease_writes and r["t"] <= lease_writes[0]["t"]:
            continue
        if st == 409:  # lost a race on create/update: normal between candidates
            continue
        odd.append(r)

    res = {
        "scenario": scenario,
        "repeat": repeat,
        "workdir": workdir,
        "time_base": "seconds after A was launched; server t mapped with zero=%.3f" % (zero - t0),
        "fault": fault,
        "takeover": {"client_log": takeover_client, "who": takeover_who,
                     "record_first_write": takeover_record,
                     "after_fault_client_log": r3(takeover_client - t_fault) if takeover_client is not None else None},
        "a_stopped": a_stopped if a_stopped is not None else "never",
        "a_end": {"t": a["process_end"], "how": a["process_end_how"]},
        "a_last_successful_write": last_write.get("A"),
        "lease_holders_record": holder_changes,
        "lease_holders_polled": poll_changes,
        "final_state": final_state,
        "electors": electors,
        "dual_leader_clients": {"seconds": r3(client_dual),
                                "windows": [[r3(s), r3(e), w] for s, e, w in client_windows]},
        "dual_leader_server": server,
        "faulted_requests": [dict({k: r.get(k) for k in ("n", "t", "identity", "method", "path", "status",
                                                         "latency_ms", "fault")}, t_rel=r3(srv(r["t"])))
                             for r in faulted],
        "unexplained_errors": odd,
        "controls": [dict(c, t_rel=r3(srv(c["t"])) if "t" in c else None) for c in controls],
        "requests": len(record),
        "serve_exit_code": serve_rc,
        "t_stop": r3(t_stop),
        "notes": notes,
    }
    return res


def fmt(x):
    if x is None:
        return "-"
    if isinstance(x, float):
        return "%.2f" % x
    return str(x)


def table(results):
    head = ("scenario", "rep", "A@fault", "takeover", "by", "takeover(rec)", "A stopped",
            "A end", "dual(clients)", "dual(server)", "srv windows")
    rows = [head]
    for r in results:
        tk = r["takeover"]
        rec = tk["record_first_write"]
        srv = r["dual_leader_server"]
        rows.append((r["scenario"], str(r["repeat"]), "yes" if r["fault"].get("a_held_lease") else "NO",
                     fmt(tk["client_log"]), fmt(tk["who"]), fmt(rec["t"] if rec else None),
                     fmt(r["a_stopped"]), "%s %s" % (fmt(r["a_end"]["t"]), r["a_end"]["how"].split(" ")[0]),
                     fmt(r["dual_leader_clients"]["seconds"]), fmt(srv.get("dual_leader_seconds")),
                     fmt(srv.get("dual_leader_windows"))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = []
    for k, row in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="all", choices=SCENARIOS + ("all",))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "leasesim-python-client"))
    ap.add_argument("--leasesim", default=os.path.join(REPO, "target", "debug", "leasesim"))
    ap.add_argument("--venv", default=None,
                    help="a venv to use (created, with kubernetes==%s, when missing)" % KUBERNETES_VERSION)
    args = ap.parse_args()
    args.out = os.path.abspath(args.out)
    args.leasesim = os.path.abspath(args.leasesim)
    if args.venv:
        args.venv = os.path.abspath(args.venv)
    if not os.access(args.leasesim, os.X_OK):
        sys.exit("no leasesim binary at %s" % args.leasesim)
    ensure_venv(args)

    os.makedirs(args.out, exist_ok=True)
    scenarios = SCENARIOS if args.scenario == "all" else (args.scenario,)
    results = []
    for scenario in scenarios:
        for repeat in range(1, args.repeats + 1):
            print("== %s repeat %d" % (scenario, repeat), flush=True)
            res = run_once(args, scenario, repeat)
            results.append(res)
            print(table([res]).splitlines()[-1], flush=True)
            for n in res["notes"]:
                print("   note: %s" % n, flush=True)
            with open(os.path.join(args.out, "results.json"), "w") as f:
                json.dump({"kubernetes": KUBERNETES_VERSION, "leasesim": args.leasesim,
                           "timeline": {"B_C_launch": T_START_OTHERS, "fault": T_FAULT, "end": T_END},
                           "results": results}, f, indent=1)
    print()
    print(table(results))
    print("\nresults: %s" % os.path.join(args.out, "results.json"))


if __name__ == "__main__":
    main()
