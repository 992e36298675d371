#!/usr/bin/env python3
"""The inspector (GET /ui/) in a real Chromium.

Starts listd (write and read tokens set) on a free loopback port with a fresh
database, opens /ui/ in Debian's chromium through Debian's chromium-driver
(selenium from PyPI, pointed at both: nothing is downloaded at run time),
types the *read* token into the page, then writes with curl and requires the
page to show each change within one second: a row inserted, moved and
updated, a section inserted, a deleted list, and a reset (the list created
again). A control check proves the waiting can fail. Screenshots go to a
temporary folder (or $LISTD_SCREENSHOTS), whose path is printed.

With $LISTD_JS_PACKAGE naming the JavaScript client's packed tarball (npm
pack of clients/js; .ci/browser makes one), the page then imports that
tarball's listd.js, follows the list with subscribe/getSnapshot and a token
provider, and must show a write within the same second: the package as
published, in a real browser against a real listd. Then the package's outbox:
five writes made while listd is unreachable (a port nobody listens on) are
kept in IndexedDB; after a reload a new client over the same IndexedDB sends
them to listd, and the list holds each once, in order.

    python3 Tests/Browser/inspector_test.py [path/to/listd]

Exit status: 0 passed, 1 failed, 77 skipped (no chromium, chromedriver or
selenium here, and CI is not set; under CI=true a missing tool is a failure).
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WRITE_TOKEN = "browser-write-token"
READ_TOKEN = "browser-read-token"
DEADLINE = 1.0  # seconds from a write to the page showing it


def skip_or_fail(reason):
    if os.environ.get("CI") == "true":
        print(f"inspector test: FAILED: {reason} (CI=true: every tool must be present)", file=sys.stderr)
        sys.exit(1)
    print(f"inspector test: SKIPPED: {reason}", file=sys.stderr)
    sys.exit(77)


def find_tools():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or (
        "/usr/lib/chromium/chromedriver" if os.path.exists("/usr/lib/chromium/chromedriver") else None)
    if not chromium:
        skip_or_fail("chromium is not installed (apt-get install chromium)")
    if not driver:
        skip_or_fail("chromedriver is not installed (apt-get install chromium-driver)")
    if not shutil.which("curl"):
        skip_or_fail("curl is not installed")
    try:
        import selenium  # noqa: F401
    except ImportError:
        skip_or_fail("selenium is not installed (pip install selenium)")
    return chromium, driver


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def curl(method, url, body=None):
    command = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", method,
               "-H", f"Authorization: Bearer {WRITE_TOKEN}", url]
    if body is not None:
        command[1:1] = ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
    status = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    if not status.startswith("2"):
        raise AssertionError(f"{method} {url} answered {status}")


class Failure(Exception):
    pass


def check_package(browser, js, wait, base, package):
    """The packed client in the browser: imported from the tarball, following `groceries`."""
    with tarfile.open(package) as archive:
        source = archive.extractfile("package/listd.js").read().decode("utf-8")
    # A page of the same origin without the inspector's Content-Security-Policy
    # (which allows scripts from 'self' only, not a blob: module).
    browser.get(f"{base}/healthz")
    js("""
        const [source, token] = arguments;
        window.pkg = {};
        const url = URL.createObjectURL(new Blob([source], {type: 'text/javascript'}));
        import(url).then(({ ListdClient }) => {
          const client = new ListdClient({ baseURL: location.origin, token: async () => token });
          const follower = client.follow('groceries');
          follower.subscribe(() => {
            const snapshot = follower.getSnapshot();
            window.pkg = { state: follower.state, version: snapshot?.version,
                           items: snapshot ? snapshot.sections.flatMap(s => s.items.map(i => i.id)) : null };
          });
        }, (error) => { window.pkg = { error: String(error) }; });""", source, READ_TOKEN)
    def package_state():
        return js("return window.pkg") or {}

    def require(condition, what, seconds=DEADLINE):
        took = wait(condition, what, seconds)
        if took is None:
            raise Failure(f"the packed client did not show {what} within {seconds} s; its state: {package_state()}")
        print(f"  ok: {what} ({took * 1000:.0f} ms)")

    require(lambda: package_state().get("state") == "live" and package_state().get("items") == ["bread"],
            "the packed client live on the list (subscribe/getSnapshot)", 5)
    curl("POST", f"{base}/lists/groceries/sections/bakery/items", {"id": "bun", "model": {}})
    require(lambda: package_state().get("items") == ["bread", "bun"], "a write through the packed client")


def check_outbox(browser, js, wait, base, package):
    """The packed client's outbox in IndexedDB: writes made while listd is unreachable
    survive a reload, and a new client over the same IndexedDB sends each once, in order."""
    with tarfile.open(package) as archive:
        source = archive.extractfile("package/listd.js").read().decode("utf-8")
    curl("POST", f"{base}/lists", {"id": "outbox", "sections": [{"id": "s", "items": []}]})
    unreachable = f"http://127.0.0.1:{free_port()}"  # nothing listens there: every write fails to connect
    # Run as an async function (WebDriver waits for its promise), with the packed module in window.listd.
    load = """
        const source = arguments[0];
        const url = URL.createObjectURL(new Blob([source], {type: 'text/javascript'}));
        window.listd = window.listd || await import(url);"""

    def run(script, *args):
        return js("return (async () => {" + script + "})();", *args)
    browser.get(f"{base}/healthz")
    pending = run(load + """
        const [, baseURL, token] = arguments;
        const { ListdClient, IndexedDBOutboxStorage } = window.listd;
        window.client = new ListdClient({ baseURL, token, retry: { minDelay: 50, maxDelay: 200 },
                                          outbox: { storage: new IndexedDBOutboxStorage('listd-browser-test') } });
        window.outcomes = [];
        for (const n of [1, 2, 3, 4, 5]) {
          window.client.createItem('outbox', 's', { model: { n } })
            .then(() => outcomes.push('answered'), (error) => outcomes.push(String(error)));
        }
        return window.client.pendingWrites.count;""", source, unreachable, WRITE_TOKEN)
    def stored():
        return run(load + """
            const records = await new window.listd.IndexedDBOutboxStorage('listd-browser-test').load();
            return records.map(record => JSON.parse(record.body).model.n);""", source)
    took = wait(lambda: js("return window.client.pendingWrites.state") == "waiting" and stored() == [1, 2, 3, 4, 5],
                "five writes stored", 5)
    if took is None:
        raise Failure(f"the outbox did not store five writes while offline: pending {pending}, "
                      f"{js('return window.client.pendingWrites')}, stored {stored()}, outcomes {js('return window.outcomes')}")
    print(f"  ok: five writes queued in IndexedDB while listd is unreachable ({took * 1000:.0f} ms)")
    keys = js("return [...window.client.pendingWrites.ids]")
    browser.refresh()  # the page and its client are gone; the IndexedDB stays
    run(load + """
        const [, token] = arguments;
        const { ListdClient, IndexedDBOutboxStorage } = window.listd;
        window.sent = [];
        const fetchAndLog = async (url, init) => {
          const response = await fetch(url, init);
          if (init.method !== 'GET') window.sent.push([init.headers['Idempotency-Key'], response.status]);
          return response;
        };
        window.client = new ListdClient({ baseURL: location.origin, token, fetch: fetchAndLog,
                                          outbox: { storage: new IndexedDBOutboxStorage('listd-browser-test') } });
        return true;""", source, WRITE_TOKEN)
    took = wait(lambda: len(js("return window.sent")) == 5 and js("return window.client.pendingWrites.count") == 0,
                "the outbox drained", 5)
    if took is None:
        raise Failure(f"the reloaded page's outbox did not drain: sent {js('return window.sent')}, "
                      f"{js('return window.client.pendingWrites')}")
    sent = js("return window.sent")
    if [key for key, _ in sent] != keys:
        raise Failure(f"the reloaded page sent {sent}, expected the keys {keys} in order")
    items = run("""
        const snapshot = await window.client.getList('outbox');
        return snapshot.sections[0].items.map(item => item.model.n);""")
    if items != [1, 2, 3, 4, 5]:
        raise Failure(f"after the reload the list holds {items}, expected each write once, in order: [1, 2, 3, 4, 5]")
    if stored() != []:
        raise Failure(f"the outbox still holds {stored()} after draining")
    print(f"  ok: after a reload, a new client over the same IndexedDB sent each write once, in order, "
          f"with the same keys ({took * 1000:.0f} ms)")


def main():
    chromium, driver_path = find_tools()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build/debug/listd")
    if not os.access(binary, os.X_OK):
        print(f"inspector test: no listd binary at {binary}; build it first", file=sys.stderr)
        sys.exit(1)
    work = tempfile.mkdtemp(prefix="listd-browser-")
    shots = os.environ.get("LISTD_SCREENSHOTS") or os.path.join(work, "screenshots")
    os.makedirs(shots, exist_ok=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(os.path.join(work, "listd.log"), "w")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LISTD_")}
    env.update(LISTD_WRITE_TOKEN=WRITE_TOKEN, LISTD_READ_TOKEN=READ_TOKEN)
    server = subprocess.Popen(
        [binary, "serve", "--host", "127.0.0.1", "--port", str(port), "--db", os.path.join(work, "listd.sqlite"),
         "--migrations", os.path.join(ROOT, "Migrations"), "--synchronous", "normal"],
        stdout=subprocess.DEVNULL, stderr=log, env=env)
    browser = None
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.02)
        else:
            raise Failure("listd did not start")
        # It listens before its store is open, answering 503 until then.
        for _ in range(500):
            probe = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                                    "-H", f"Authorization: Bearer {WRITE_TOKEN}", f"{base}/lists"],
                                   capture_output=True, text=True)
            if probe.stdout.startswith("2"):
                break
            time.sleep(0.02)
        else:
            raise Failure("listd did not become ready")

        curl("POST", f"{base}/lists", {
            "id": "groceries", "name": "Groceries", "sections": [
                {"id": "fruit", "model": {"title": "Fruit"},
                 "items": [{"id": "apple", "model": {"qty": 3}}, {"id": "pear", "model": {"qty": 1}}]},
                {"id": "veg", "model": {"title": "Veg"}, "items": [{"id": "leek", "model": {"qty": 2}}]}]})

        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1280,900", "--no-first-run", "--disable-extensions"]:
            options.add_argument(argument)
        browser = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)

        def js(script, *args):
            return browser.execute_script(script, *args)

        def wait(condition, what, seconds=DEADLINE):
            started = time.monotonic()
            while time.monotonic() - started < seconds:
                if condition():
                    return time.monotonic() - started
                time.sleep(0.01)
            return None

        def require(condition, what, seconds=DEADLINE):
            took = wait(condition, what, seconds)
            if took is None:
                browser.save_screenshot(os.path.join(shots, "failure.png"))
                raise Failure(f"the page did not show {what} within {seconds} s; state: {state()}")
            print(f"  ok: {what} ({took * 1000:.0f} ms)")

        def state():
            return js("""
                const sections = [...document.querySelectorAll('#table tbody.section')].map(body => ({
                  id: body.dataset.sectionId,
                  items: [...body.querySelectorAll('tr.row')].map(row => [row.dataset.itemId, row.dataset.model])}));
                return {sections, version: document.querySelector('#version').dataset.version,
                        resets: document.querySelector('#resets').dataset.resets,
                        banner: document.querySelector('#banner').hidden ? '' : document.querySelector('#banner').textContent,
                        connection: document.querySelector('#connection').dataset.state};""")

        def items(section):
            for entry in state()["sections"]:
                if entry["id"] == section:
                    return [item for item, _ in entry["items"]]
            return None

        # The page asks for a token; the read token is enough to follow.
        browser.get(f"{base}/ui/")
        require(lambda: "token" in js("return document.querySelector('#lists-error').textContent"),
                "that it needs a token", 5)
        browser.find_element("id", "token").send_keys(READ_TOKEN)
        browser.find_element("css selector", "#token-form button").click()
        if js("return sessionStorage.getItem('listd.inspector.token')") != READ_TOKEN:
            raise Failure("the token is not kept in sessionStorage")
        require(lambda: js("return document.querySelector('#lists tbody tr[data-list-id=groceries]') !== null"),
                "the list of lists", 5)
        browser.find_element("css selector", "#lists tbody tr[data-list-id=groceries]").click()
        require(lambda: state()["version"] == "1" and items("fruit") == ["apple", "pear"], "the snapshot", 5)
        require(lambda: state()["connection"] == "live", "a live event stream", 5)

        # Control: waiting for something that never happens must fail, or the checks below prove nothing.
        if wait(lambda: items("fruit") == ["ghost"], "a row never written", 0.3) is not None:
            raise Failure("the wait accepted a state that was never written")

        curl("POST", f"{base}/lists/groceries/sections/fruit/items", {"id": "fig", "model": {"qty": 7}})
        require(lambda: items("fruit") == ["apple", "pear", "fig"], "a row inserted")
        browser.save_screenshot(os.path.join(shots, "inserted.png"))

        curl("PATCH", f"{base}/lists/groceries", {"ops": [{"op": "moveItem", "id": "fig", "section": "veg", "to": 0}]})
        time.sleep(0.12)  # mid-slide, for the screenshot: the moved row is still highlighted
        browser.save_screenshot(os.path.join(shots, "mid-change.png"))
        require(lambda: items("fruit") == ["apple", "pear"] and items("veg") == ["fig", "leek"], "a row moved")

        curl("PATCH", f"{base}/lists/groceries/items/apple", {"model": {"qty": 5, "done": True}})
        require(lambda: any(item == "apple" and json.loads(model) == {"qty": 5, "done": True}
                            for entry in state()["sections"] for item, model in entry["items"]), "a row updated")

        curl("POST", f"{base}/lists/groceries/sections", {"id": "dairy", "model": {"title": "Dairy"}, "at": 0})
        require(lambda: [entry["id"] for entry in state()["sections"]] == ["dairy", "fruit", "veg"], "a section inserted")
        require(lambda: state()["version"] == "5", "the version")

        # One batch of several kinds: the page animates it as its stages.
        curl("PATCH", f"{base}/lists/groceries", {"ops": [
            {"op": "insertItem", "section": "dairy", "item": {"id": "milk", "model": {"qty": 1}}},
            {"op": "updateItem", "id": "pear", "model": {"qty": 4}},
            {"op": "moveItem", "id": "apple", "section": "veg", "to": 1},
            {"op": "deleteItem", "id": "leek"}]})
        time.sleep(0.2)  # mid-animation: the rows are still highlighted
        browser.save_screenshot(os.path.join(shots, "mid-batch.png"))
        require(lambda: items("dairy") == ["milk"] and items("fruit") == ["pear"] and items("veg") == ["fig", "apple"],
                "a batch of an insert, an update, a move and a delete")

        # A view typed into the query box: the page follows it instead of the whole list,
        # with the view's sections (one per value of `done`, ids in JSON) and its own positions.
        box = browser.find_element("id", "view")
        box.clear()
        box.send_keys("group=done")
        browser.find_element("css selector", "#view-form button").click()
        require(lambda: items("null") == ["milk", "pear", "fig"] and items("true") == ["apple"],
                "a view's snapshot (group=done)", 5)
        if "group=done" not in js("return location.hash"):
            raise Failure("the view is not in the page's URL")
        curl("PATCH", f"{base}/lists/groceries/items/pear", {"model": {"qty": 4, "done": True}})
        require(lambda: items("null") == ["milk", "fig"] and items("true") == ["pear", "apple"],
                "a row moved from one of the view's groups to another")
        browser.save_screenshot(os.path.join(shots, "view.png"))
        box.clear()
        browser.find_element("css selector", "#view-form button").click()
        require(lambda: items("fruit") == ["pear"] and items("veg") == ["fig", "apple"], "the whole list again", 5)

        curl("DELETE", f"{base}/lists/groceries")
        require(lambda: "deleted" in state()["banner"] and state()["sections"] == [], "a deleted list")
        browser.save_screenshot(os.path.join(shots, "deleted.png"))

        curl("POST", f"{base}/lists", {"id": "groceries", "sections": [{"id": "bakery", "items": [{"id": "bread"}]}]})
        require(lambda: state()["resets"] == "1" and items("bakery") == ["bread"] and "Reset" in state()["banner"],
                "a reset (the list created again)")
        browser.save_screenshot(os.path.join(shots, "reset.png"))

        package = os.environ.get("LISTD_JS_PACKAGE")
        if package:
            check_package(browser, js, wait, base, package)
            check_outbox(browser, js, wait, base, package)
        print(f"inspector test: passed; screenshots in {shots}")
        return 0
    except Failure as failure:
        print(f"inspector test: FAILED: {failure}", file=sys.stderr)
        print(f"screenshots in {shots}; listd log in {work}/listd.log", file=sys.stderr)
        return 1
    finally:
        if browser is not None:
            browser.quit()
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


if __name__ == "__main__":
    sys.exit(main())
