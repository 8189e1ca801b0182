"""A kazoo client that moves from ZooKeeper to zkbridge with its session.

start HOSTS: connect, create the ephemeral /members/kazoo, print
"SESSIONID PASSWORDHEX", stay connected until a line arrives on stdin, then
leave without closing the session (as a client whose connection string is
about to change).
resume HOSTS SESSIONID PASSWORDHEX: connect to HOSTS with that session id
and password; the session must be the same one, with its ephemeral.
"""
import os
import sys

from kazoo.client import KazooClient

mode, hosts = sys.argv[1], sys.argv[2]
if mode == "start":
    zk = KazooClient(hosts=hosts, timeout=40)
    zk.start(timeout=30)
    zk.create("/members/kazoo", b"kazoo", ephemeral=True)
    sid, pw = zk.client_id
    print("%d %s" % (sid, pw.hex()), flush=True)
    sys.stdin.readline()
    os._exit(0)  # no closeSession: the session lives on
sid, pw = int(sys.argv[3]), bytes.fromhex(sys.argv[4])
zk = KazooClient(hosts=hosts, timeout=40, client_id=(sid, pw))
zk.start(timeout=30)
if zk.client_id[0] != sid:
    sys.exit("kazoo got a new session 0x%x instead of 0x%x" % (zk.client_id[0], sid))
data, stat = zk.get("/members/kazoo")
if data != b"kazoo" or stat.ephemeralOwner != sid:
    sys.exit("the ephemeral after the move: %r owner 0x%x" % (data, stat.ephemeralOwner))
print("resumed 0x%x with its ephemeral" % sid, flush=True)
os._exit(0)  # leave the session to its timeout, as on ZooKeeper
