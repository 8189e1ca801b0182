#!/usr/bin/env python3
"""kazoo's SASL GSSAPI (pure-sasl with python3-kerberos) against one server.

usage: kazoo_gssapi.py HOST:PORT ROOT

The environment names the Kerberos realm (KRB5_CONFIG) and a credential
cache holding the client's tickets (KRB5CCNAME); the server's principal
is zookeeper/HOST. Prints one line per observation; the test compares
them between ZooKeeper and zkbridge.
"""
import logging
import sys

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id, Permissions

logging.basicConfig(level=logging.CRITICAL)
addr, root = sys.argv[1], sys.argv[2]


def client(sasl=True):
    opts = {"mechanism": "GSSAPI", "service": "zookeeper"} if sasl else None
    return KazooClient(hosts=addr, sasl_options=opts, timeout=10,
                       connection_retry={"max_tries": 0})


c = client()
c.start(timeout=20)
c.create(root, b"secret", acl=[ACL(Permissions.ALL, Id("auth", ""))])
acl, _ = c.get_acls(root)
print("acl of a node created with the auth ACL:", [(a.perms, a.id.scheme, a.id.id) for a in acl])
print("the client reads:", c.get(root)[0])

anon = client(sasl=False)
anon.start(timeout=20)
try:
    anon.get(root)
    print("anonymous reads")
except NoAuthError:
    print("anonymous: NoAuthError")
anon.stop()
c.delete(root)
c.stop()
print("OK")
