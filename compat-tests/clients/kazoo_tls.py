"""kazoo over TLS (use_ssl) with a client certificate: creates a node
readable only by its own x509 identity, reads it back, and prints what it
saw, for the Go test to compare between ZooKeeper and zkbridge.

usage: kazoo_tls.py HOST:PORT CA_PEM CLIENT_CERT_PEM CLIENT_KEY_PEM DN ROOT
"""
import sys

from kazoo.client import KazooClient
from kazoo.security import make_acl


def main():
    hosts, ca, cert, key, dn, root = sys.argv[1:7]
    zk = KazooClient(hosts=hosts, use_ssl=True, ca=ca, certfile=cert, keyfile=key,
                     verify_certs=True, timeout=15)
    zk.start(timeout=30)
    try:
        acl = [make_acl("x509", dn, all=True)]
        zk.create(root, b"", makepath=True)
        path = zk.create(root + "/mine", b"only me", acl=acl)
        print("created", path)
        data, stat = zk.get(path)
        print("read", data.decode(), "version", stat.version)
        acls, _ = zk.get_acls(path)
        for a in acls:
            print("acl", a.id.scheme, a.id.id, a.perms)
        zk.set(path, b"changed")
        print("read", zk.get(path)[0].decode())
        print("children", sorted(zk.get_children(root)))
        zk.delete(root, recursive=True)
        print("OK")
    finally:
        zk.stop()
        zk.close()


if __name__ == "__main__":
    main()
