#!/usr/bin/python3
"""kazoo's recipes driven against one server; run by TestClientKazoo.

usage: kazoo_recipes.py HOSTS ROOT

Prints one line per recipe with what it observed (deterministic, so the
test compares the lines of ZooKeeper's run with zkbridge's) and exits
non-zero with a message on the first failed assertion. Every wait is
bounded; the whole run is bounded by an alarm.
"""

import signal
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    LockTimeout,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
)
from kazoo.recipe.cache import TreeCache, TreeEvent

WAIT = 10.0  # bound of every single wait, seconds


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def eventually(pred, what, timeout=WAIT):
    """Polls pred until it holds; fails after timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.02)
    raise Failure("timed out waiting for " + what)


def joined(thread, what):
    thread.join(WAIT)
    check(not thread.is_alive(), what + " did not finish")


def report(name, *facts):
    print(name + ": " + " ".join(str(f) for f in facts), flush=True)


def lock(a, b, root):
    la, lb = a.Lock(root + "/lock", "alice"), b.Lock(root + "/lock", "bob")
    check(la.acquire(timeout=WAIT), "alice did not get the free lock")
    check(not lb.acquire(blocking=False), "bob got a held lock")
    try:
        lb.acquire(timeout=0.3)
        raise Failure("bob's timed acquire of a held lock succeeded")
    except LockTimeout:
        pass
    got = threading.Event()
    t = threading.Thread(target=lambda: lb.acquire(timeout=WAIT) and got.set())
    t.start()
    eventually(lambda: len(la.contenders()) == 2, "two contenders")
    contenders = la.contenders()
    la.release()
    joined(t, "bob's acquire")
    check(got.is_set(), "bob did not get the released lock")
    lb.release()
    # Read/write locks: readers share, a writer excludes them.
    r1, r2 = a.ReadLock(root + "/rw", "r1"), b.ReadLock(root + "/rw", "r2")
    w = b.WriteLock(root + "/rw", "w")
    check(r1.acquire(timeout=WAIT) and r2.acquire(timeout=WAIT), "readers did not share")
    check(not w.acquire(blocking=False), "writer got a read-held lock")
    r1.release()
    r2.release()
    check(w.acquire(timeout=WAIT), "writer did not get the free lock")
    w.release()
    report("Lock", "contenders=" + ",".join(contenders), "handoff=ok", "rw=ok")


def election(a, b, root):
    ea, eb = a.Election(root + "/election", "alice"), b.Election(root + "/election", "bob")
    leaders = []
    a_leading, a_stop = threading.Event(), threading.Event()

    def lead_a():
        leaders.append("alice")
        a_leading.set()
        a_stop.wait(WAIT)

    def lead_b():
        leaders.append("bob")

    ta = threading.Thread(target=ea.run, args=(lead_a,))
    ta.start()
    check(a_leading.wait(WAIT), "alice never led")
    tb = threading.Thread(target=eb.run, args=(lead_b,))
    tb.start()
    eventually(lambda: len(ea.contenders()) == 2, "two contenders")
    contenders = ea.contenders()
    a_stop.set()
    joined(ta, "alice's election")
    joined(tb, "bob's election")
    report("Election", "leaders=" + ",".join(leaders), "contenders=" + ",".join(contenders))


def counter(a, b, root):
    ca, cb = a.Counter(root + "/counter"), b.Counter(root + "/counter")
    ca += 5
    cb -= 2
    ca += 10
    values = [ca.value, cb.value]
    check(values == [13, 13], "counter values %r" % values)
    fa = a.Counter(root + "/fcounter", default=0.5)
    fa += 1.25
    check(fa.value == 1.75, "float counter %r" % fa.value)
    report("Counter", "value=%d" % ca.value, "float=%s" % fa.value, "pre=%s" % ca.pre_value, "post=%s" % ca.post_value)


def queue(a, b, root):
    qa, qb = a.Queue(root + "/queue"), b.Queue(root + "/queue")
    for item, prio in ((b"low", 200), (b"high", 10), (b"mid", 100), (b"mid2", 100)):
        qa.put(item, priority=prio)
    n = len(qb)
    got = [qb.get() for _ in range(4)]
    check(qb.get() is None, "empty queue returned an item")
    qa.put(b"x")
    qa.put(b"y")
    got2 = [qb.get(), qa.get()]
    report("Queue", "len=%d" % n, "order=" + ",".join(x.decode() for x in got), "fifo=" + ",".join(x.decode() for x in got2))


def locking_queue(a, b, root):
    qa, qb = a.LockingQueue(root + "/lqueue"), b.LockingQueue(root + "/lqueue")
    qa.put(b"one")
    qa.put(b"two", priority=1)
    qa.put_all([b"three", b"four"], priority=50)
    n = len(qb)
    first = qb.get(timeout=WAIT)
    check(qb.holds_lock(), "consumer does not hold the entry's lock")
    # Another consumer skips the locked entry.
    second = qa.get(timeout=WAIT)
    check(qb.consume() and qa.consume(), "consume failed")
    rest = []
    for _ in range(2):
        rest.append(qb.get(timeout=WAIT))
        check(qb.consume(), "consume failed")
    check(qa.get(timeout=0.3) is None, "empty locking queue returned an item")
    check(len(qa) == 0, "locking queue not empty")
    # Released (not consumed) entries come back.
    qa.put(b"again")
    check(qa.get(timeout=WAIT) == b"again", "no item")
    check(qa.release(), "release failed")
    back = qb.get(timeout=WAIT)
    check(qb.consume(), "consume failed")
    report("LockingQueue", "len=%d" % n, "order=" + ",".join(x.decode() for x in [first, second] + rest), "released=" + back.decode())


def barrier(a, b, root):
    ba, bb = a.Barrier(root + "/barrier"), b.Barrier(root + "/barrier")
    check(bb.wait(0.1), "wait on an absent barrier did not pass")
    ba.create()
    check(not bb.wait(0.3), "wait on a raised barrier passed")
    passed = []
    t = threading.Thread(target=lambda: passed.append(bb.wait(WAIT)))
    t.start()
    time.sleep(0.1)
    check(ba.remove(), "barrier remove failed")
    joined(t, "barrier wait")
    report("Barrier", "passed=%s" % passed)


def double_barrier(a, b, root):
    da = a.DoubleBarrier(root + "/dbarrier", 2, identifier="alice")
    db = b.DoubleBarrier(root + "/dbarrier", 2, identifier="bob")
    steps = []
    lock = threading.Lock()

    def run(d, who):
        d.enter()
        with lock:
            steps.append("in")
        d.leave()
        with lock:
            steps.append("out")

    ta = threading.Thread(target=run, args=(da, "alice"))
    ta.start()
    time.sleep(0.2)
    check(steps == [], "entered a double barrier alone")
    tb = threading.Thread(target=run, args=(db, "bob"))
    tb.start()
    joined(ta, "alice's double barrier")
    joined(tb, "bob's double barrier")
    check(steps == ["in", "in", "out", "out"], "double barrier steps %r" % steps)
    report("DoubleBarrier", "steps=" + ",".join(steps))


def party(a, b, root):
    pa, pb = a.Party(root + "/party", "alice"), b.Party(root + "/party", "bob")
    pa.join()
    pb.join()
    members = sorted(pa)
    n = len(pb)
    pa.leave()
    eventually(lambda: list(pb) == ["bob"], "alice gone from the party")
    sa, sb = a.ShallowParty(root + "/sparty", "alice"), b.ShallowParty(root + "/sparty", "bob")
    sa.join()
    sb.join()
    shallow = sorted(sb)
    report("Party", "members=" + ",".join(members), "len=%d" % n, "after_leave=" + ",".join(pb), "shallow=" + ",".join(shallow))


def semaphore(a, b, root):
    s1 = a.Semaphore(root + "/sem", "s1", max_leases=2)
    s2 = b.Semaphore(root + "/sem", "s2", max_leases=2)
    s3 = b.Semaphore(root + "/sem", "s3", max_leases=2)
    check(s1.acquire(timeout=WAIT) and s2.acquire(timeout=WAIT), "two leases not granted")
    check(not s3.acquire(blocking=False), "third lease granted")
    holders = sorted(s1.lease_holders())
    got = threading.Event()
    t = threading.Thread(target=lambda: s3.acquire(timeout=WAIT) and got.set())
    t.start()
    time.sleep(0.1)
    s1.release()
    joined(t, "third lease")
    check(got.is_set(), "third lease not granted after a release")
    after = sorted(s3.lease_holders())
    s2.release()
    s3.release()
    report("Semaphore", "holders=" + ",".join(holders), "after_release=" + ",".join(after))


def tree_cache(a, b, root):
    base = root + "/tree"
    a.create(base + "/x", b"1", makepath=True)
    cache = TreeCache(b, base)
    events = []
    lock = threading.Lock()

    def listener(ev):
        with lock:
            if ev.event_type == TreeEvent.INITIALIZED:
                events.append("INITIALIZED")
            elif ev.event_data is not None:
                name = {TreeEvent.NODE_ADDED: "ADDED", TreeEvent.NODE_UPDATED: "UPDATED",
                        TreeEvent.NODE_REMOVED: "REMOVED"}.get(ev.event_type, str(ev.event_type))
                events.append("%s %s=%s" % (name, ev.event_data.path[len(base):] or "/", ev.event_data.data.decode()))

    cache.listen(listener)
    cache.start()
    try:
        eventually(lambda: "INITIALIZED" in events, "tree cache initialised")
        a.create(base + "/y/z", b"2", makepath=True)
        a.set(base + "/x", b"3")
        # Listeners run after the cache is updated: wait for both.
        eventually(lambda: "UPDATED /x=3" in events and "ADDED /y/z=2" in events, "update and grandchild events")
        check(cache.get_data(base + "/x").data == b"3", "cache missed the update")
        a.delete(base + "/x")
        eventually(lambda: "REMOVED /x=3" in events, "delete event")
        check(cache.get_data(base + "/x") is None, "cache missed the delete")
        children = sorted(cache.get_children(base))
        with lock:
            # Adds during the initial load race with the listener: order
            # events only by what each path saw.
            seen = sorted(events)
    finally:
        cache.close()
    report("TreeCache", "children=" + ",".join(children), "events=" + ";".join(seen))


def data_watch(a, b, root):
    path = root + "/dw"
    seen = []

    @b.DataWatch(path)
    def watcher(data, stat, event):
        seen.append("%s/%s/%s" % (None if data is None else data.decode(), None if stat is None else stat.version,
                                  None if event is None else event.type))

    eventually(lambda: len(seen) == 1, "first call")
    a.create(path, b"v0")
    eventually(lambda: len(seen) == 2, "create seen")
    a.set(path, b"v1")
    eventually(lambda: len(seen) == 3, "set seen")
    a.delete(path)
    eventually(lambda: len(seen) == 4, "delete seen")
    report("DataWatch", " ".join(seen))


def children_watch(a, b, root):
    path = root + "/cw"
    a.create(path)
    seen = []

    @b.ChildrenWatch(path, send_event=True)
    def watcher(children, event):
        seen.append("[%s]/%s" % (",".join(sorted(children)), None if event is None else event.type))

    eventually(lambda: len(seen) == 1, "first call")
    a.create(path + "/k1")
    eventually(lambda: len(seen) == 2, "child added")
    a.create(path + "/k2")
    eventually(lambda: len(seen) == 3, "second child added")
    a.delete(path + "/k1")
    eventually(lambda: len(seen) == 4, "child removed")
    a.set(path, b"data changes do not fire a children watch")
    a.create(path + "/k3")
    eventually(lambda: len(seen) == 5, "third child added")
    report("ChildrenWatch", " ".join(seen))


def transactions(a, b, root):
    base = root + "/txn"
    a.create(base)
    tx = a.transaction()
    tx.create(base + "/n", b"1")
    tx.create(base + "/s-", b"", sequence=True)
    tx.set_data(base + "/n", b"2")
    tx.check(base + "/n", 1)
    ok = tx.commit()
    check(ok[0] == base + "/n" and ok[1] == base + "/s-0000000001", "commit results %r" % ok[:2])
    check(ok[2].version == 1 and ok[3] is True, "set/check results %r" % ok[2:])
    data, stat = b.get(base + "/n")
    # A failing transaction: nothing applies, each op reports why.
    tx = b.transaction()
    tx.create(base + "/m", b"")
    tx.check(base + "/n", 7)
    tx.delete(base + "/nope")
    bad = tx.commit()
    kinds = [type(r).__name__ for r in bad]
    check(isinstance(bad[0], RolledBackError) and isinstance(bad[1], BadVersionError), "failed commit %r" % kinds)
    check(b.exists(base + "/m") is None, "a failed transaction applied its create")
    tx = b.transaction()
    tx.create(base + "/n", b"")
    dup = [type(r).__name__ for r in tx.commit()]
    # The context-manager form commits on exit.
    with a.transaction() as t2:
        t2.delete(base + "/n")
        t2.delete(base + "/s-0000000001")
    check(b.get_children(base) == [], "transaction deletes not applied")
    try:
        b.delete(base + "/n")
        raise Failure("delete of a deleted node succeeded")
    except NoNodeError:
        pass
    report("Transaction", "ok=%s,%s,v%d,%s" % (ok[0][len(base):], ok[1][len(base):], ok[2].version, ok[3]),
           "data=%s/v%d" % (data.decode(), stat.version), "failed=" + ",".join(kinds), "dup=" + ",".join(dup))


def basics(a, b, root):
    """Plain client calls around the recipes, for the record."""
    path = a.create(root + "/eph-", b"e", ephemeral=True, sequence=True)
    try:
        a.create(root + "/basics", b"x")
        a.create(root + "/basics", b"x")
        raise Failure("duplicate create succeeded")
    except NodeExistsError:
        pass
    data, stat = b.get(root + "/basics")
    try:
        b.set(root + "/basics", b"y", version=5)
        raise Failure("set with a wrong version succeeded")
    except BadVersionError:
        pass
    b.ensure_path(root + "/deep/er/path")
    a.delete(root + "/deep", recursive=True)
    check(b.exists(root + "/deep") is None, "recursive delete left the node")
    b.sync(root)
    eph_owner = b.exists(path).ephemeralOwner == a.client_id[0]
    report("Basics", path[len(root):], "data=%s" % data.decode(), "version=%d" % stat.version, "eph_owner=%s" % eph_owner)


RECIPES = [basics, lock, election, counter, queue, locking_queue, barrier, double_barrier, party, semaphore,
           tree_cache, data_watch, children_watch, transactions]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: kazoo_recipes.py HOSTS ROOT")
    hosts, root = sys.argv[1], sys.argv[2]
    signal.signal(signal.SIGALRM, lambda *_: (print("FAIL: the script ran over 50 s", flush=True), sys.exit(3)))
    signal.alarm(50)
    a, b = KazooClient(hosts=hosts, timeout=10), KazooClient(hosts=hosts, timeout=10)
    a.start(timeout=WAIT)
    b.start(timeout=WAIT)
    try:
        a.create(root)
        for recipe in RECIPES:
            sub = root + "/" + recipe.__name__
            a.create(sub)
            try:
                recipe(a, b, sub)
            except Failure as e:
                print("FAIL %s: %s" % (recipe.__name__, e), flush=True)
                sys.exit(1)
            except Exception as e:  # an unexpected kazoo error is a failure too
                print("FAIL %s: %s: %s" % (recipe.__name__, type(e).__name__, e), flush=True)
                sys.exit(1)
        a.delete(root, recursive=True)
    finally:
        a.stop()
        b.stop()
        a.close()
        b.close()
    print("OK", flush=True)


if __name__ == "__main__":
    main()
