#!/usr/bin/env python3
"""The classroom page in a real browser: Debian's chromium driven by chromedriver over the
WebDriver protocol (plain HTTP + JSON, no client library).

    python3 classroom.py LEASESIM_BINARY SCREENSHOT_DIR

Exit 0: every check passed; 77: chromium or chromedriver missing (the message says how to
install them); anything else: a check failed (the message says which).
"""

import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import base64
import urllib.request

LEASESIM, SHOTS = sys.argv[1], sys.argv[2]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http(method, url, body=None, headers=None, context=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("content-type", "application/json")
    with urllib.request.urlopen(req, timeout=30, context=context) as r:
        return json.loads(r.read() or b"{}")


class Browser:
    def __init__(self):
        self.port = free_port()
        self.driver = subprocess.Popen(["chromedriver", "--port=%d" % self.port],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = "http://127.0.0.1:%d" % self.port
        for _ in range(100):
            try:
                http("GET", self.base + "/status")
                break
            except Exception:
                time.sleep(0.1)
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": shutil.which("chromium"),
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1024,768"]}}}}
        self.session = http("POST", self.base + "/session", caps)["value"]["sessionId"]
        self.s = self.base + "/session/" + self.session

    def go(self, url):
        http("POST", self.s + "/url", {"url": url})

    def size(self, w, h):
        http("POST", self.s + "/window/rect", {"width": w, "height": h})

    def js(self, script, *args):
        return http("POST", self.s + "/execute/sync", {"script": script, "args": list(args)})["value"]

    def find(self, css):
        return http("POST", self.s + "/element", {"using": "css selector", "value": css})["value"]

    def click(self, css):
        el = self.find(css)
        key = next(iter(el))
        http("POST", self.s + "/element/%s/click" % el[key], {})

    def shot(self, name):
        png = http("GET", self.s + "/screenshot")["value"]
        with open(os.path.join(SHOTS, name), "wb") as f:
            f.write(base64.b64decode(png))

    def wait(self, script, what, timeout=10.0):
        end = time.time() + timeout
        while time.time() < end:
            v = self.js(script)
            if v:
                return v
            time.sleep(0.1)
        raise AssertionError("timed out waiting for " + what)

    def close(self):
        try:
            http("DELETE", self.s)
        finally:
            self.driver.kill()


def main():
    missing = [b for b in ("chromium", "chromedriver") if not shutil.which(b)]
    if missing:
        print("skipped: %s not installed (apt-get install chromium chromium-driver)" % " and ".join(missing))
        return 77
    os.makedirs(SHOTS, exist_ok=True)
    work = tempfile.mkdtemp(prefix="leasesim-classroom-")
    serve = subprocess.Popen([LEASESIM, "serve", "--listen", "127.0.0.1:0", "--port-file", os.path.join(work, "port"),
                              "--out", os.path.join(work, "out"), "--client", "A"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=work)
    b = None
    try:
        for _ in range(200):
            if os.path.exists(os.path.join(work, "port")):
                break
            time.sleep(0.05)
        port = int(open(os.path.join(work, "port")).read())
        page = "http://127.0.0.1:%d/" % port
        b = Browser()

        # 1. The lesson opens drawn; RD past LD - RP brings the window, below it there is none.
        b.go(page + "?scenario=split-brain&set=" + urllib.request.quote('defaults.renew_deadline="10s"'))
        verdict = b.wait("return document.getElementById('timeline').innerHTML.includes('<svg') && "
                         "document.getElementById('verdict').textContent", "the first timeline")
        assert verdict.startswith("One leader at a time"), verdict
        # Move the RD slider to 25 s, as a user would (the change event the page listens to).
        b.js("const s = document.getElementById('rd'); s.value = 25; s.dispatchEvent(new Event('input'));"
             "s.dispatchEvent(new Event('change'));")
        verdict = b.wait("const v = document.getElementById('verdict').textContent;"
                         "return v.startsWith('Two leaders') && v", "the dual-leader verdict")
        svg = b.js("return document.getElementById('timeline').innerHTML")
        assert "#F8D7D9" in svg.upper() or "dual-leader window" in svg, "the drawn window is in the timeline"
        url = b.js("return location.search")
        assert "renew_deadline" in urllib.request.unquote(url) and "25s" in urllib.request.unquote(url), url
        b.shot("playground-1024x768.png")
        b.size(1920, 1080)
        b.shot("playground-1920x1080.png")
        b.size(1024, 768)
        # Nothing wider than the window.
        wide = b.js("return document.documentElement.scrollWidth > window.innerWidth")
        assert not wide, "the page scrolls sideways at 1024 px"

        # 1b. Per-node controls: choose the second node, move its clock offset; the URL holds that
        # node's key and the first node's slider keeps its own value when chosen again.
        b.js("const n = document.getElementById('node'); n.value = '1'; n.dispatchEvent(new Event('change'));")
        key = b.js("return document.getElementById('offset').dataset.key")
        assert key == "nodes.1.clock.offset", key
        b.js("const s = document.getElementById('offset'); s.value = -5; s.dispatchEvent(new Event('input'));"
             "s.dispatchEvent(new Event('change'));")
        b.wait("return decodeURIComponent(location.search).includes('nodes.1.clock.offset=\"-5s\"')",
               "node 1's offset in the URL")
        b.js("const n = document.getElementById('node'); n.value = '0'; n.dispatchEvent(new Event('change'));")
        shown = b.js("return document.getElementById('offset-out').textContent")
        assert shown == "scenario's", shown
        # Keyboard: focus the RP slider and press the right arrow, as a keyboard user would.
        el = b.find("#rp")
        eid = el[next(iter(el))]
        before = b.js("return document.getElementById('rp').value")
        http("POST", b.s + "/element/%s/value" % eid, {"text": "\ue014"})  # ArrowRight
        b.wait("return document.getElementById('rp').value !== '%s'" % before, "the keyboard moving the slider")
        b.wait("return decodeURIComponent(location.search).includes('retry_period')", "the key press rerunning")

        # 2. A pasted file with an error gets validate's located message.
        b.js("document.querySelector('details').open = true;"
             "document.getElementById('source').value = 'name = \"x\"\\ndescription = \"x\"\\nduration = \"1m\"\\n"
             "[[nodes]]\\nlease_duration = \"soon\"\\n';")
        b.click("#use-source")
        error = b.wait("const e = document.getElementById('error'); return !e.hidden && e.textContent",
                       "the located error")
        assert error.startswith("pasted.toml:5:") and "^" in error, error

        # 3. The live view: a Lease written through the API appears within a second; a fault
        #    injected from the page shows in the request log.
        # The administrator's is the first user of the kubeconfig.
        token = next(l for l in open(os.path.join(work, "out.session", "kubeconfig")).read().split("users:")[1]
                     .split("\n") if "token:" in l).split("token:")[1].strip()
        b.go(page + "?token=" + token + "#live")
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        api = "https://127.0.0.1:%d" % port
        auth = {"authorization": "Bearer " + token}
        http("POST", api + "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": "op"}}, auth, ctx)
        written = time.time()
        http("POST", api + "/apis/coordination.k8s.io/v1/namespaces/op/leases",
             {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "class"},
              "spec": {"holderIdentity": "student-1", "leaseDurationSeconds": 15}}, auth, ctx)
        b.wait("return document.getElementById('lease-rows').textContent.includes('student-1')",
               "the Lease in the live view", timeout=1.5)
        seen_after = time.time() - written
        b.wait("return [...document.getElementById('f-client').options].some(o => o.value === 'A')",
               "the identities")
        b.js("document.getElementById('f-client').value = 'A'; document.getElementById('f-kind').value = '409';")
        b.click("#f-inject")
        a_token = None
        users = open(os.path.join(work, "out.session", "kubeconfig")).read().split("users:")[1].split("\n")
        for i, l in enumerate(users):
            if l.strip() in ("- name: A", '- name: "A"'):
                a_token = next(x for x in users[i:] if "token:" in x).split("token:")[1].strip()
        assert a_token, "A's token"
        try:
            http("GET", api + "/apis/coordination.k8s.io/v1/namespaces/op/leases/class",
                 headers={"authorization": "Bearer " + a_token}, context=ctx)
        except urllib.error.HTTPError as e:
            assert e.code == 409, e.code
        b.wait("return [...document.querySelectorAll('#log-rows tr.fault')].some(r => r.textContent.includes('409'))",
               "the fault in the request log", timeout=3)
        b.shot("live-1024x768.png")
        print("ok: lesson, slider, located error, live Lease after %.2f s, fault in the log" % seen_after)
        return 0
    finally:
        if b:
            b.close()
        serve.terminate()
        try:
            serve.wait(10)
        except Exception:
            serve.kill()


if __name__ == "__main__":
    sys.exit(main())
