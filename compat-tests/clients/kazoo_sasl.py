#!/usr/bin/env python3
"""kazoo's SASL (DIGEST-MD5 through pure-sasl) against one server.

usage: kazoo_sasl.py HOST:PORT ROOT

The server's JAAS file must list user bob (password bobsecret). Prints one
line per observation; the test compares them between ZooKeeper and
zkbridge.
"""
import logging
import sys
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id, Permissions

logging.basicConfig(level=logging.CRITICAL)
addr, root = sys.argv[1], sys.argv[2]


def client(user=None, password=None, mechanism="DIGEST-MD5"):
    opts = None
    if user is not None:
        opts = {"mechanism": mechanism, "username": user, "password": password}
    return KazooClient(hosts=addr, sasl_options=opts, timeout=10,
                       connection_retry={"max_tries": 0})


bob = client("bob", "bobsecret")
bob.start(timeout=20)
bob.create(root, b"secret", acl=[ACL(Permissions.ALL, Id("auth", ""))])
acl, _ = bob.get_acls(root)
print("acl of a node created with the auth ACL:", [(a.perms, a.id.scheme, a.id.id) for a in acl])
print("bob reads:", bob.get(root)[0])

anon = client()
anon.start(timeout=20)
try:
    anon.get(root)
    print("anonymous reads")
except NoAuthError:
    print("anonymous: NoAuthError")
anon.stop()

# A sasl ACL written by name.
bob.create(root + "/named", b"", acl=[ACL(Permissions.READ, Id("sasl", "bob"))])
print("named sasl ACL:", [(a.perms, a.id.scheme, a.id.id) for a in bob.get_acls(root + "/named")[0]])
bob.delete(root, recursive=True)
bob.stop()

for label, user, password, mechanism in [
    ("wrong password", "bob", "wrong", "DIGEST-MD5"),
    ("unknown user", "eve", "evesecret", "DIGEST-MD5"),
    ("PLAIN mechanism", "bob", "bobsecret", "PLAIN"),
]:
    c = client(user, password, mechanism)
    states = []
    c.add_listener(lambda st: states.append(str(st)))
    # Started asynchronously: whether start() returns or times out when the
    # exchange fails right after CONNECTED is a race inside kazoo. Wait for
    # the session to be lost, or for 3 s of it staying up.
    c.start_async()
    deadline = time.time() + 3
    while time.time() < deadline and "LOST" not in states:
        time.sleep(0.05)
    try:
        c.exists("/")
        outcome = "exists succeeded"
    except Exception as e:  # the exception's class is the observation
        outcome = "exists raised " + type(e).__name__
    print(label + ":", outcome + "; states", " ".join(dict.fromkeys(states)))
    try:
        c.stop()
        c.close()
    except Exception:
        pass
print("OK")
