#!/usr/bin/env python3
"""One leader-election candidate: the real Python `kubernetes` client's
`kubernetes.leaderelection` with its `LeaseLock`, against `leasesim serve`.

    python elector.py IDENTITY KUBECONFIG

IDENTITY is a `--client NAME` of `leasesim serve`; the kubeconfig's context
`leasesim-IDENTITY` carries its token. Lines on stdout (wall clock, time.time()):

    <t> <identity> launched
    <t> <identity> started            onstarted_leading was called
    <t> <identity> stopped            onstopped_leading was called
    <t> <identity> run-returned       LeaderElection.run() returned
    <t> <identity> run-raised <Type> <message>
    <t> <identity> sigterm            the harness stopped the process
    <t> <identity> leading-post <true|false> <status|error>

Each callback also tells the server (POST /leasesim/v1/leading, with this
client's own token) so that the server's report counts the client's own spans.
The package's own log lines (logger "leaderelection") go to stderr.
"""

import base64
import json
import logging
import os
import signal
import ssl
import sys
import time
import urllib.error
import urllib.request

import yaml
from kubernetes import client, config
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

LEASE_NAME = "widget-operator"
LEASE_NAMESPACE = "op-leader"
LEASE_DURATION = 6
RENEW_DEADLINE = 4
RETRY_PERIOD = 2


def log(identity, what):
    # One write per line so that lines from the callback thread and the main
    # thread never interleave.
    sys.stdout.write("%.6f %s %s\n" % (time.time(), identity, what))
    sys.stdout.flush()


def context_credentials(kubeconfig, context_name):
    """Server URL, bearer token and an SSL context for one kubeconfig context."""
    with open(kubeconfig) as f:
        kc = yaml.safe_load(f)
    ctx = next(c["context"] for c in kc["contexts"] if c["name"] == context_name)
    cluster = next(c["cluster"] for c in kc["clusters"] if c["name"] == ctx["cluster"])
    user = next(u["user"] for u in kc["users"] if u["name"] == ctx["user"])
    ca_pem = base64.b64decode(cluster["certificate-authority-data"]).decode()
    ssl_ctx = ssl.create_default_context(cadata=ca_pem)
    return cluster["server"].rstrip("/"), user["token"], ssl_ctx


class LeadingReporter:
    """POSTs the client's own word (leading true/false) to leasesim serve."""

    def __init__(self, identity, server, token, ssl_ctx):
        self.identity = identity
        self.url = server + "/leasesim/v1/leading"
        self.token = token
        self.ssl_ctx = ssl_ctx

    def post(self, leading):
        body = json.dumps({"leading": leading,
                           "lease": "%s/%s" % (LEASE_NAMESPACE, LEASE_NAME)}).encode()
        req = urllib.request.Request(self.url, data=body, method="POST", headers={
            "Authorization": "Bearer " + self.token,
            "Content-Type": "application/json",
        })
        word = "true" if leading else "false"
        try:
            with urllib.request.urlopen(req, context=self.ssl_ctx, timeout=5) as resp:
                log(self.identity, "leading-post %s %d" % (word, resp.status))
        except urllib.error.HTTPError as e:
            detail = e.read()[:200].decode("utf-8", "replace").replace("\n", " ")
            log(self.identity, "leading-post %s %d %s" % (word, e.code, detail))
        except Exception as e:  # never let the callback raise: that would stop leading
            log(self.identity, "leading-post %s error %s %s" % (word, type(e).__name__, e))


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: elector.py IDENTITY KUBECONFIG")
    identity, kubeconfig = sys.argv[1], sys.argv[2]
    context_name = "leasesim-" + identity

    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(created).6f %(name)s %(levelname)s %(message)s")

    def on_sigterm(signum, frame):
        log(identity, "sigterm")
        os._exit(143)

    signal.signal(signal.SIGTERM, on_sigterm)
    log(identity, "launched")

    # LeaseLock(name, namespace, identity) builds its own client.CoordinationV1Api()
    # from the default configuration, so this client's config must be the default
    # one in this process (one elector per process).
    config.load_kube_config(config_file=kubeconfig, context=context_name)
    api_client = client.ApiClient()
    lock = LeaseLock(LEASE_NAME, LEASE_NAMESPACE, identity)
    # Same configuration as the default; made explicit so the lock uses this client.
    lock.api_instance = client.CoordinationV1Api(api_client)

    server, token, ssl_ctx = context_credentials(kubeconfig, context_name)
    reporter = LeadingReporter(identity, server, token, ssl_ctx)

    def onstarted_leading():
        log(identity, "started")
        reporter.post(True)

    def onstopped_leading():
        log(identity, "stopped")
        reporter.post(False)

    cfg = electionconfig.Config(lock, lease_duration=LEASE_DURATION,
                                renew_deadline=RENEW_DEADLINE, retry_period=RETRY_PERIOD,
                                onstarted_leading=onstarted_leading,
                                onstopped_leading=onstopped_leading)
    try:
        leaderelection.LeaderElection(cfg).run()
    except BaseException as e:
        msg = str(e).replace("\n", " ")[:300]
        log(identity, "run-raised %s %s" % (type(e).__name__, msg))
        sys.exit(1)
    log(identity, "run-returned")


if __name__ == "__main__":
    main()
